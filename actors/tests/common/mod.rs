//! Test media made on the spot: espeak-ng speech over ffmpeg test pictures,
//! plus helpers to inspect what the pipeline wrote.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};

use clipforge_actors::media::whisper::{ModelOptions, WhisperModel};

/// Sentences spoken in the fixtures: plain words (no digits) so the word
/// error rate measures recognition, not number formatting.
pub const TALK: [&str; 16] = [
    "Have you ever wondered why some videos go viral while others are ignored?",
    "The secret is simple, and most creators never learn it.",
    "People decide in the first three seconds whether they will keep watching.",
    "So your opening sentence must promise something valuable.",
    "Here is the biggest mistake I see every single day.",
    "Creators start with a long introduction about themselves.",
    "Nobody cares about your name before they care about your idea.",
    "Instead, open with a question that your viewer really wants answered.",
    "Then deliver the answer quickly, and keep the pace lively.",
    "Short sentences work better than long explanations.",
    "Captions matter too, because many people watch without sound.",
    "Bright words that follow the speaker keep the eyes on the screen.",
    "What should you do after the video ends?",
    "Ask your audience to comment with their own experience.",
    "This simple habit can double your reach within a month.",
    "Try it this week and tell me what happens!",
];

pub fn cache_dir() -> PathBuf {
    std::env::var_os("CLIPFORGE_CACHE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").expect("HOME"))
                .join(".cache")
                .join("clipforge")
        })
}

pub fn model_dir() -> PathBuf {
    std::env::var_os("CLIPFORGE_MODEL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| cache_dir().join("models").join("whisper-base"))
}

/// One model for every test of a binary (loading takes a second and 150 MB).
pub fn model() -> Arc<WhisperModel> {
    static MODEL: OnceLock<Arc<WhisperModel>> = OnceLock::new();
    MODEL
        .get_or_init(|| {
            let opts = ModelOptions {
                threads: 2,
                ..ModelOptions::default()
            };
            Arc::new(
                WhisperModel::load(&model_dir(), &opts)
                    .expect("the Whisper model is installed (make setup)"),
            )
        })
        .clone()
}

/// Runs `cmd` to completion; panics with its stderr when it fails.
pub fn run(cmd: &mut Command) -> std::process::Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `pgrep -f marker`: the ids of running processes whose command line
/// contains `marker` (empty when none).
pub fn processes_matching(marker: &str) -> String {
    let out = Command::new("pgrep")
        .args(["-f", marker])
        .output()
        .expect("pgrep");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// espeak-ng speaking `text` into a WAV file.
pub fn speech_wav(dir: &Path, name: &str, text: &str) -> PathBuf {
    let wav = dir.join(format!("{name}.wav"));
    run(Command::new("espeak-ng")
        .args(["-v", "en-us", "-s", "150", "-g", "4", "-w"])
        .arg(&wav)
        .arg(text));
    wav
}

/// A video of `picture` (an ffmpeg lavfi source such as "testsrc2" or
/// "color=c=0x336699") at `size`, with `wav` as its sound (or no sound), as long
/// as the sound or `secs`.
pub fn video(
    dir: &Path,
    name: &str,
    picture: &str,
    size: &str,
    wav: Option<&Path>,
    secs: f64,
) -> PathBuf {
    let out = dir.join(format!("{name}.mp4"));
    let mut cmd = Command::new("ffmpeg");
    cmd.args(["-nostdin", "-y", "-v", "error", "-f", "lavfi", "-i"])
        .arg(format!(
            "{picture}{}s={size}:r=25:d={secs}",
            if picture.contains('=') { ':' } else { '=' }
        ));
    if let Some(w) = wav {
        cmd.arg("-i")
            .arg(w)
            .args(["-af", "apad"])
            .args(["-t", &format!("{secs}")]);
    }
    cmd.args([
        "-c:v",
        "libx264",
        "-preset",
        "ultrafast",
        "-pix_fmt",
        "yuv420p",
    ]);
    if wav.is_some() {
        cmd.args(["-c:a", "aac", "-b:a", "96k"]);
    }
    cmd.arg(&out);
    run(&mut cmd);
    out
}

/// Seconds of a media file, by ffprobe.
pub fn duration_of(path: &Path) -> f64 {
    let out = Command::new("ffprobe")
        .args([
            "-v",
            "error",
            "-show_entries",
            "format=duration",
            "-of",
            "default=nw=1:nk=1",
        ])
        .arg(path)
        .output()
        .expect("ffprobe");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("a duration")
}

/// A talking-head-free test video with the whole TALK spoken (about 90 s).
pub fn talk_video(dir: &Path) -> PathBuf {
    let wav = speech_wav(dir, "talk", &TALK.join(" "));
    let secs = duration_of(&wav) + 1.0;
    video(dir, "talk", "testsrc2", "1280x720", Some(&wav), secs)
}

/// ffprobe's JSON for a file.
pub fn probe_json(path: &Path) -> serde_json::Value {
    let out = Command::new("ffprobe")
        .args([
            "-v",
            "error",
            "-print_format",
            "json",
            "-show_format",
            "-show_streams",
        ])
        .arg(path)
        .output()
        .expect("ffprobe");
    assert!(out.status.success(), "ffprobe failed on {}", path.display());
    serde_json::from_slice(&out.stdout).expect("ffprobe json")
}

/// One frame at `t` seconds as packed RGB24.
pub fn frame_rgb(video: &Path, t: f64) -> (u32, u32, Vec<u8>) {
    let info = probe_json(video);
    let v = info["streams"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["codec_type"] == "video")
        .unwrap();
    let (w, h) = (
        v["width"].as_u64().unwrap() as u32,
        v["height"].as_u64().unwrap() as u32,
    );
    let out = Command::new("ffmpeg")
        .args(["-nostdin", "-v", "error", "-ss", &format!("{t:.3}"), "-i"])
        .arg(video)
        .args([
            "-frames:v",
            "1",
            "-f",
            "rawvideo",
            "-pix_fmt",
            "rgb24",
            "pipe:1",
        ])
        .output()
        .expect("ffmpeg");
    assert_eq!(out.stdout.len(), (w * h * 3) as usize, "frame size");
    (w, h, out.stdout)
}

/// Word error rate of `hyp` against `reference` (case and punctuation ignored).
pub fn wer(reference: &str, hyp: &str) -> f64 {
    let norm = |s: &str| -> Vec<String> {
        s.split_whitespace()
            .map(|w| {
                w.chars()
                    .filter(|c| c.is_alphanumeric() || *c == '\'')
                    .collect::<String>()
                    .to_lowercase()
            })
            .filter(|w| !w.is_empty())
            .collect()
    };
    let (r, h) = (norm(reference), norm(hyp));
    let mut prev: Vec<usize> = (0..=h.len()).collect();
    for i in 1..=r.len() {
        let mut cur = vec![i; h.len() + 1];
        for j in 1..=h.len() {
            let sub = prev[j - 1] + usize::from(r[i - 1] != h[j - 1]);
            cur[j] = sub.min(prev[j] + 1).min(cur[j - 1] + 1);
        }
        prev = cur;
    }
    prev[h.len()] as f64 / r.len().max(1) as f64
}

#[test]
fn wer_counts_edits() {
    assert_eq!(wer("the cat sat", "the cat sat"), 0.0);
    assert!((wer("the cat sat down", "the bat sat") - 0.5).abs() < 1e-9);
}

/// 16 kHz mono float samples of a media file's audio, via ffmpeg.
pub fn pcm(path: &Path) -> Vec<f32> {
    let out = run(Command::new("ffmpeg")
        .args(["-nostdin", "-v", "error", "-i"])
        .arg(path)
        .args(["-ac", "1", "-ar", "16000", "-f", "f32le", "-"]));
    out.stdout
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}
