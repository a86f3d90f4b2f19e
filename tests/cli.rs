//! `clipforge clip` as a user runs it: plain progress lines when stderr is
//! not a terminal, the files it promises, and clear errors with exit code 2.

use std::path::Path;
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_clipforge"))
}

fn make_video(dir: &Path) -> std::path::PathBuf {
    let wav = dir.join("s.wav");
    let ok = Command::new("espeak-ng")
        .args(["-v", "en-us", "-s", "150", "-w"])
        .arg(&wav)
        .arg("Short clips win attention. Captions keep people watching. Try it today!")
        .status()
        .unwrap();
    assert!(ok.success());
    let mp4 = dir.join("in.mp4");
    let ok = Command::new("ffmpeg")
        .args([
            "-nostdin",
            "-y",
            "-v",
            "error",
            "-f",
            "lavfi",
            "-i",
            "testsrc2=s=640x360:r=25:d=6",
            "-i",
        ])
        .arg(&wav)
        .args([
            "-af",
            "apad",
            "-t",
            "6",
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
            "-pix_fmt",
            "yuv420p",
            "-c:a",
            "aac",
        ])
        .arg(&mp4)
        .status()
        .unwrap();
    assert!(ok.success());
    mp4
}

/// Integrated loudness (LUFS) of a file's audio by ffmpeg's ebur128 filter.
fn integrated_lufs(path: &Path) -> f64 {
    let out = Command::new("ffmpeg")
        .args(["-nostdin", "-hide_banner", "-nostats", "-i"])
        .arg(path)
        .args(["-map", "0:a:0", "-af", "ebur128", "-f", "null", "-"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    let summary = &text[text.rfind("Summary:").expect("ebur128 summary")..];
    let line = summary
        .lines()
        .find(|l| l.trim_start().starts_with("I:"))
        .expect("integrated loudness line");
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn clip_command_writes_clips_and_reports_progress() {
    let dir = tempfile::tempdir().unwrap();
    let input = make_video(dir.path());
    let out = dir.path().join("out");
    let res = bin()
        .arg("clip")
        .arg(&input)
        .arg("--out")
        .arg(&out)
        .args([
            "--skip-cuts",
            "--duration",
            "5",
            "--template",
            "karaoke",
            "--x264-preset",
            "ultrafast",
            "--export",
            "--layout",
            "fit",
            "--aspect",
            "4:5",
            "--prompt",
            "the colour bars",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert!(res.status.success(), "exit {:?}: {stderr}", res.status);
    assert!(
        stderr.contains("clip-1.mp4") && stderr.contains(" fit "),
        "{stderr}"
    );
    for stage in ["download", "transcribe", "cut", "caption"] {
        assert!(
            stderr.contains(&format!("[{stage}] 100%")),
            "no progress line for {stage}: {stderr}"
        );
    }
    for f in [
        "clip-1.mp4",
        "clip-1.srt",
        "clip-1.vtt",
        "clip-1.jpg",
        "clips.json",
        "transcript.json",
        "project.fcpxml",
        "project.edl",
        "project.otio",
    ] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    // espeak-ng speaks at about −21 LUFS; the clip's audio is normalized.
    let lufs = integrated_lufs(&out.join("clip-1.mp4"));
    assert!((lufs + 14.0).abs() <= 1.0, "clip audio at {lufs} LUFS");
    let clips: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("clips.json")).unwrap()).unwrap();
    assert_eq!(clips["clips"].as_array().unwrap().len(), 1);
    assert_eq!(clips["clips"][0]["endSec"], 5.0);
    assert_eq!(clips["clips"][0]["layout"], "fit");
    assert_eq!(clips["clips"][0]["layoutReason"], "forced");
    let probe = std::process::Command::new("ffprobe")
        .args(["-v", "error", "-select_streams", "v:0", "-show_entries"])
        .args(["stream=width,height", "-of", "csv=p=0"])
        .arg(out.join("clip-1.mp4"))
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&probe.stdout).trim(),
        "1080,1350",
        "4:5"
    );
    // Every clip says why, with sub-scores (and the prompt's match).
    let c = &clips["clips"][0];
    assert!(
        c["reason"].as_str().is_some_and(|r| r.ends_with('.')),
        "{c}"
    );
    for k in ["hook", "completeness", "emotion", "pace", "promptMatch"] {
        assert!(
            c["scores"][k].as_u64().is_some_and(|v| v <= 100),
            "{k}: {c}"
        );
    }
    // The editor timelines point at the input, and put the clip at 0–5 s.
    let fcpxml = std::fs::read_to_string(out.join("project.fcpxml")).unwrap();
    assert!(fcpxml.contains("src=\"file:///"), "{fcpxml}");
    assert!(fcpxml.contains("in.mp4"), "{fcpxml}");
    let otio: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("project.otio")).unwrap()).unwrap();
    let clip = &otio["tracks"]["children"][0]["children"][0];
    assert_eq!(clip["source_range"]["start_time"]["value"], 0.0);
    assert_eq!(
        clip["source_range"]["duration"]["value"], 125.0,
        "5 s at 25 fps"
    );
    let edl = std::fs::read_to_string(out.join("project.edl")).unwrap();
    assert!(
        edl.contains(
            "001  AX       AA/V  C        00:00:00:00 00:00:05:00 01:00:00:00 01:00:05:00"
        ),
        "{edl}"
    );
}

#[test]
fn clip_command_explains_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("holiday.mp4");
    std::fs::write(&fake, "just some text\n").unwrap();
    let res = bin()
        .arg("clip")
        .arg(&fake)
        .arg("--out")
        .arg(dir.path().join("o"))
        .output()
        .unwrap();
    assert_eq!(res.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert!(
        stderr.contains("holiday.mp4") && stderr.contains("not a video"),
        "{stderr}"
    );

    let res = bin()
        .args(["clip", "x.mp4", "--preset", "5-10"])
        .output()
        .unwrap();
    assert_eq!(res.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&res.stderr).contains("unknown preset"));
    let res = bin()
        .args(["clip", "x.mp4", "--template", "sparkly"])
        .output()
        .unwrap();
    assert_eq!(res.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&res.stderr).contains("unknown template"));
    for (flag, value, says) in [
        ("--aspect", "3:2", "unknown aspect ratio"),
        ("--layout", "pip", "unknown layout"),
    ] {
        let res = bin().args(["clip", "x.mp4", flag, value]).output().unwrap();
        assert_eq!(res.status.code(), Some(2), "{flag}");
        assert!(
            String::from_utf8_lossy(&res.stderr).contains(says),
            "{flag}"
        );
    }
    let long = "x".repeat(501);
    let res = bin()
        .args(["clip", "x.mp4", "--prompt", &long])
        .output()
        .unwrap();
    assert_eq!(res.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&res.stderr).contains("--prompt is longer than 500"));
}

/// The model loads on its own task while the input is probed and the
/// audio starts: a model that cannot load ends the run with its reason
/// (not a hang, not a panic), and no clip is written.
#[test]
fn a_model_that_cannot_load_ends_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let video = make_video(dir.path());
    let empty = dir.path().join("no-model");
    std::fs::create_dir(&empty).unwrap();
    let out = dir.path().join("o");
    let res = bin()
        .arg("clip")
        .arg(&video)
        .arg("--out")
        .arg(&out)
        .arg("--model")
        .arg(&empty)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert_eq!(res.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("no Whisper model"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let clips = std::fs::read_dir(&out)
        .map(|d| {
            d.flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "mp4"))
                .count()
        })
        .unwrap_or(0);
    assert_eq!(clips, 0);
}

/// Beside the words, on spare CPU (which needs the right to put a lowered
/// thread back), the scene changes are found and, with skip cuts, the clip
/// is framed; without that right (no CAP_SYS_NICE) the cut and caption
/// stages do it, as for chosen cuts. Both ways give the same clip framing.
#[test]
fn a_skip_cuts_clip_is_framed_during_transcription_when_it_may_be() {
    let dir = tempfile::tempdir().unwrap();
    let input = make_video(dir.path());
    let run = |restricted: bool, out: &str| {
        let mut cmd = match restricted {
            true => {
                let mut c = Command::new("setpriv");
                c.args(["--bounding-set=-sys_nice"])
                    .arg(env!("CARGO_BIN_EXE_clipforge"));
                c
            }
            false => bin(),
        };
        let res = cmd
            .arg("clip")
            .arg(&input)
            .arg("--out")
            .arg(dir.path().join(out))
            .args(["--skip-cuts", "--json", "--x264-preset", "ultrafast"])
            .env("RUST_LOG", "clipforge_actors=info")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&res.stderr);
        assert!(res.status.success(), "exit {:?}: {stderr}", res.status);
        let summary: serde_json::Value = serde_json::from_slice(&res.stdout).unwrap();
        let clips: serde_json::Value = serde_json::from_slice(
            &std::fs::read(dir.path().join(out).join("clips.json")).unwrap(),
        )
        .unwrap();
        let secs = |k: &str| summary["stageSeconds"][k].as_f64().unwrap();
        let c = &clips["clips"][0];
        let logged = ["scene changes found ahead", "clip framed ahead"].map(|m| stderr.contains(m));
        (
            (secs("transcribeFraming"), secs("captionFaces"), logged),
            (c["layout"].clone(), c["layoutReason"].clone()),
        )
    };
    let ((ahead, faces, logged), framing) = run(false, "ahead");
    // SAFETY: geteuid only reads.
    if unsafe { libc::geteuid() } == 0 {
        assert!(
            ahead > 0.0 && faces == 0.0 && logged == [true, true],
            "ahead {ahead} s, faces {faces} s, logged {logged:?}"
        );
    }
    let ((ahead_r, faces_r, logged_r), framing_r) = run(true, "restricted");
    assert!(
        ahead_r == 0.0 && faces_r > 0.0 && logged_r == [false, false],
        "restricted: ahead {ahead_r} s, faces {faces_r} s, logged {logged_r:?}"
    );
    assert_eq!(framing, framing_r);
}

/// The binary runs CTranslate2 on the backend docs/internals/pipeline.md promises:
/// oneMKL on Intel CPUs (oneDNN elsewhere) and AVX-512 kernels where the CPU
/// has them, whatever order the linked objects' static initialisers run in;
/// an operator's own CT2_USE_MKL still wins.
#[test]
fn ctranslate2_backend_follows_the_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let input = make_video(dir.path());
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap();
    let intel = cpuinfo.contains("GenuineIntel");
    let flags = cpuinfo
        .lines()
        .find(|l| l.starts_with("flags"))
        .unwrap_or_default()
        .to_string();
    let avx512 = ["avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw"]
        .iter()
        .all(|f| flags.split_whitespace().any(|x| x == *f));
    let log = |env: &[(&str, &str)]| {
        let res = bin()
            .arg("clip")
            .arg(&input)
            .arg("--out")
            .arg(dir.path().join("out"))
            .args(["--skip-cuts", "--language", "en", "--threads", "2"])
            .env("CT2_VERBOSE", "1")
            .envs(env.iter().copied())
            .output()
            .unwrap();
        assert!(
            res.status.success(),
            "{}",
            String::from_utf8_lossy(&res.stderr)
        );
        String::from_utf8_lossy(&res.stderr).into_owned()
    };
    let default = log(&[]);
    let expect_mkl = format!("Use Intel MKL: {intel}");
    assert!(
        default.contains(&expect_mkl),
        "want {expect_mkl:?} in:\n{default}"
    );
    let expect_isa = if avx512 {
        "Selected ISA: AVX512"
    } else {
        "Selected ISA: AVX2"
    };
    assert!(
        default.contains(expect_isa),
        "want {expect_isa:?} in:\n{default}"
    );
    let operator = log(&[("CT2_USE_MKL", "0")]);
    assert!(operator.contains("Use Intel MKL: false"), "{operator}");
}
