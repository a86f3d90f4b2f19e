//! Topic boundaries on real media (issue 15): three unrelated recordings —
//! different subjects, voices and pictures — joined into one input. The
//! real Whisper model transcribes it and the cut stage picks clips: no clip
//! may run across a join, so none starts on the last words of one recording
//! and runs into the next.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use clipforge_actors::projects::stages::cut::{self, CutOptions};
use clipforge_actors::projects::stages::transcribe::{self, TranscribeOptions};
use clipforge_actors::projects::stages::{Progress, StageCtx};
use tokio_util::sync::CancellationToken;

const COOKING: &str = "Fresh pasta needs only flour, eggs and a little patience. \
    Knead the dough for ten minutes until it feels smooth and elastic. \
    Let the dough rest under a towel for half an hour. \
    Roll it very thin and cut it into wide ribbons. \
    The tomato sauce starts with garlic and good olive oil. \
    Simmer the sauce slowly while the salted water boils. \
    Cook the ribbons for two minutes, then toss them in the sauce. \
    Serve the pasta at once with grated cheese and fresh basil.";

const TIDES: &str = "Ocean tides follow the pull of the moon on the seas. \
    The moon drags a bulge of seawater around the planet every day. \
    Coastal towns see a high tide twice in each lunar day. \
    Spring tides happen when the sun and the moon line up. \
    Neap tides are weaker because the sun pulls from the side. \
    Sailors read tide tables before they leave the harbour. \
    Strong currents form where tides squeeze through narrow straits. \
    In some northern bays the sea level rises by fifteen metres.";

const BIKES: &str = "A bicycle chain wears out long before the gears do. \
    Measure the chain with a simple gauge every few hundred kilometres. \
    Clean the links with a rag and a little degreaser. \
    Oil each roller, then wipe away everything on the outside. \
    Check the brake pads for grooves and replace them when they are thin. \
    Pump the tyres to the pressure printed on the sidewall. \
    Tighten the bolts on the stem and the handlebars carefully. \
    A clean, oiled bike is quieter, faster and much safer.";

fn run(cmd: &mut Command) {
    let out = cmd.output().expect("run a tool");
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// One recording: `text` in `voice` over `picture`.
fn recording(dir: &Path, name: &str, text: &str, voice: &str, picture: &str) -> PathBuf {
    let wav = dir.join(format!("{name}.wav"));
    run(Command::new("espeak-ng")
        .args(["-v", voice, "-s", "165", "-w"])
        .arg(&wav)
        .arg(text));
    let secs = common::duration_of(&wav);
    common::video(dir, name, picture, "640x360", Some(&wav), secs)
}

/// The parts joined end to end (re-encoded, like an edit of several
/// recordings would be).
fn join(dir: &Path, parts: &[PathBuf]) -> PathBuf {
    let out = dir.join("joined.mp4");
    let mut cmd = Command::new("ffmpeg");
    cmd.args(["-nostdin", "-y", "-v", "error"]);
    for p in parts {
        cmd.arg("-i").arg(p);
    }
    let inputs: String = (0..parts.len())
        .map(|i| format!("[{i}:v][{i}:a]"))
        .collect();
    cmd.args([
        "-filter_complex",
        &format!("{inputs}concat=n={}:v=1:a=1[v][a]", parts.len()),
        "-map",
        "[v]",
        "-map",
        "[a]",
        "-c:v",
        "libx264",
        "-preset",
        "ultrafast",
        "-pix_fmt",
        "yuv420p",
        "-c:a",
        "aac",
    ])
    .arg(&out);
    run(&mut cmd);
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn no_clip_runs_across_the_join_of_two_recordings() {
    let dir = tempfile::tempdir().unwrap();
    let parts = vec![
        recording(dir.path(), "cooking", COOKING, "en-us", "testsrc2"),
        recording(dir.path(), "tides", TIDES, "en-gb-scotland", "smptebars"),
        recording(dir.path(), "bikes", BIKES, "en-029", "color=c=0x884422"),
    ];
    let mut joins = Vec::new();
    let mut at = 0.0;
    for p in &parts[..parts.len() - 1] {
        at += common::duration_of(p);
        joins.push(at);
    }
    let input = join(dir.path(), &parts);
    let total = common::duration_of(&input);

    let ctx = StageCtx::new(CancellationToken::new(), Progress::silent());
    let tr = transcribe::run(
        &input,
        common::model(),
        TranscribeOptions {
            language: Some("en".into()),
            expected_secs: total,
            ..TranscribeOptions::default()
        },
        &ctx,
    )
    .await
    .expect("transcribe");
    let t = &tr.transcript;
    let plans = cut::run(
        &input,
        t,
        &tr.loudness_db,
        None,
        &CutOptions {
            range: (20.0, 60.0),
            flexible_range: false,
            max_clips: 10,
            skip_cuts: false,
            start: 0.0,
            duration: total,
            rerank: None,
            prompt: None,
            remove_fillers: false,
        },
        &ctx,
    )
    .await
    .expect("cut");

    eprintln!("joins at {joins:?} s of {total:.1} s");
    for p in &plans {
        eprintln!(
            "clip {:.2}–{:.2} score {} “{}”: {}",
            p.start,
            p.end,
            p.score,
            p.title,
            clipforge_actors::transcript::join_words(&t.words[p.first_word..p.end_word])
        );
    }
    assert!(plans.len() >= 2, "{plans:?}");
    for p in &plans {
        let words = &t.words[p.first_word..p.end_word];
        let mid = |w: &clipforge_actors::transcript::Word| (w.start + w.end) / 2.0;
        for &j in &joins {
            let before = words.iter().filter(|w| mid(w) < j).count();
            assert!(
                before == 0 || before == words.len(),
                "clip {:.2}–{:.2} runs across the join at {j:.2} s ({before} of {} words before it)",
                p.start,
                p.end,
                words.len()
            );
            // Its padded cut stays in the silence around the join.
            assert!(p.end <= j + 0.6 || p.start >= j - 0.6, "{p:?} vs {j}");
        }
        assert!(
            !p.reason.is_empty() && p.title.chars().count() <= 60,
            "{p:?}"
        );
    }
}
