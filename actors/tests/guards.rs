//! Decoding guards on inputs that make Whisper loop or hallucinate: long
//! noise, a music chord, breaths in silence, a word repeated with pauses, a
//! stuttered reading. Real model, real media made here with ffmpeg, sox and
//! espeak-ng. Every assertion is a property the guards guarantee whatever
//! the sampling draws (no run of more than 5 equal words; no words where
//! there is no voice), so the tests do not depend on test order.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use clipforge_actors::projects::stages::transcribe::{self, TranscribeOptions};
use clipforge_actors::projects::stages::{Progress, StageCtx};
use clipforge_actors::transcript::{join_words, Word};
use tokio_util::sync::CancellationToken;

fn ctx() -> StageCtx {
    StageCtx::new(CancellationToken::new(), Progress::silent())
}

/// A model of this test's own (not shared with the tests running at the
/// same time). The temperature fallback samples from CTranslate2's
/// generators, one per thread, seeded once when the thread first samples;
/// threads are reused, so sampled decodes still differ between runs — the
/// assertions below hold for every outcome seen.
fn own_model() -> std::sync::Arc<clipforge_actors::media::whisper::WhisperModel> {
    let opts = clipforge_actors::media::whisper::ModelOptions {
        threads: 2,
        ..Default::default()
    };
    std::sync::Arc::new(
        clipforge_actors::media::whisper::WhisperModel::load(&common::model_dir(), &opts)
            .expect("the Whisper model is installed (make setup)"),
    )
}

async fn transcribe(input: &Path) -> Vec<Word> {
    let out = transcribe::run(
        input,
        own_model(),
        TranscribeOptions {
            language: Some("en".into()),
            expected_secs: common::duration_of(input),
            ..TranscribeOptions::default()
        },
        &ctx(),
    )
    .await
    .expect("transcribe");
    out.transcript.words
}

fn norm(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// The longest run of the same word, and that word.
fn longest_run(words: &[Word]) -> (usize, String) {
    let mut best = (0, String::new());
    let mut run = 0;
    for (i, w) in words.iter().enumerate() {
        if i > 0 && norm(&w.text) == norm(&words[i - 1].text) {
            run += 1;
        } else {
            run = 1;
        }
        if run > best.0 {
            best = (run, norm(&w.text));
        }
    }
    best
}

fn assert_no_loop(words: &[Word], what: &str) {
    let (run, word) = longest_run(words);
    assert!(
        run <= 5,
        "{what}: {word:?} {run} times in a row: {}",
        join_words(words)
    );
}

/// An ffmpeg lavfi audio source rendered to a 16 kHz WAV.
fn lavfi_wav(dir: &Path, name: &str, source: &str, secs: f64) -> PathBuf {
    let out = dir.join(format!("{name}.wav"));
    common::run(
        Command::new("ffmpeg")
            .args(["-nostdin", "-y", "-v", "error", "-f", "lavfi", "-i", source])
            .args(["-t", &format!("{secs}"), "-ar", "16000", "-ac", "1"])
            .arg(&out),
    );
    out
}

/// `parts` joined with sox (all 16 kHz mono).
fn concat(dir: &Path, name: &str, parts: &[PathBuf]) -> PathBuf {
    let out = dir.join(format!("{name}.wav"));
    common::run(Command::new("sox").args(parts).arg(&out));
    out
}

/// espeak-ng speech resampled to 16 kHz mono (so sox can join it).
fn speech16(dir: &Path, name: &str, text: &str) -> PathBuf {
    let raw = common::speech_wav(dir, &format!("{name}-raw"), text);
    let out = dir.join(format!("{name}.wav"));
    common::run(
        Command::new("sox")
            .arg(&raw)
            .args(["-r", "16000", "-c", "1"])
            .arg(&out),
    );
    out
}

fn silence(dir: &Path, name: &str, secs: f64) -> PathBuf {
    lavfi_wav(dir, name, "anullsrc=r=16000:cl=mono", secs)
}

/// Breaths: 0.7 s bursts of band-passed pink noise with a soft attack and
/// release, every 3 s, over faint room noise.
fn breaths(dir: &Path, name: &str, count: usize) -> PathBuf {
    let one = dir.join(format!("{name}-one.wav"));
    common::run(
        Command::new("sox")
            .args(["-n", "-r", "16000", "-c", "1"])
            .arg(&one)
            .args([
                "synth",
                "0.7",
                "pinknoise",
                "sinc",
                "300-2500",
                "fade",
                "q",
                "0.25",
                "0.7",
                "0.35",
                "gain",
                "-n",
                "-18",
                "pad",
                "0",
                "2.3",
            ]),
    );
    let joined = concat(dir, &format!("{name}-joined"), &vec![one; count]);
    let room = dir.join(format!("{name}-room.wav"));
    common::run(
        Command::new("sox")
            .args(["-n", "-r", "16000", "-c", "1"])
            .arg(&room)
            .args([
                "synth",
                &format!("{}", 3 * count),
                "brownnoise",
                "gain",
                "-n",
                "-60",
            ]),
    );
    let out = dir.join(format!("{name}.wav"));
    common::run(
        Command::new("sox")
            .arg("-m")
            .arg(&joined)
            .arg(&room)
            .arg(&out),
    );
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn long_noise_gives_no_words() {
    let dir = tempfile::tempdir().unwrap();
    let wav = lavfi_wav(
        dir.path(),
        "noise",
        "anoisesrc=r=16000:color=pink:amplitude=0.3:seed=42",
        75.0,
    );
    let words = transcribe(&wav).await;
    assert!(words.is_empty(), "noise: {}", join_words(&words));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_music_chord_gives_no_words() {
    let dir = tempfile::tempdir().unwrap();
    let wav = lavfi_wav(
        dir.path(),
        "chord",
        "aevalsrc=0.2*sin(2*PI*220*t)+0.15*sin(2*PI*277.2*t)+0.15*sin(2*PI*329.6*t):s=16000",
        40.0,
    );
    let words = transcribe(&wav).await;
    assert!(words.is_empty(), "chord: {}", join_words(&words));
}

#[tokio::test(flavor = "multi_thread")]
async fn breaths_in_silence_carry_no_words_and_speech_around_them_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let before = common::TALK[0];
    let after = common::TALK[1];
    let parts = [
        speech16(d, "before", before),
        silence(d, "gap1", 1.0),
        breaths(d, "breaths", 6),
        speech16(d, "after", after),
    ];
    let speech_end = common::duration_of(&parts[0]);
    let breaths_end = speech_end + 1.0 + 18.0;
    let wav = concat(d, "all", &parts);
    let words = transcribe(&wav).await;
    let in_breaths: Vec<&Word> = words
        .iter()
        .filter(|w| w.start > speech_end + 0.5 && w.end < breaths_end - 0.3)
        .collect();
    assert!(
        in_breaths.is_empty(),
        "words during the breaths ({speech_end:.1}..{breaths_end:.1} s): {in_breaths:?}"
    );
    let text = join_words(&words);
    let wer = common::wer(&format!("{before} {after}"), &text);
    assert!(wer <= 0.2, "word error rate {wer:.2}: {text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_word_repeated_with_pauses_does_not_loop() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let word = speech16(d, "word", "Hello.");
    let pause = silence(d, "pause", 0.8);
    let mut parts = Vec::new();
    for _ in 0..4 {
        parts.push(word.clone());
        parts.push(pause.clone());
    }
    let wav = concat(d, "repeated", &parts);
    let words = transcribe(&wav).await;
    assert_no_loop(&words, "hello with pauses");
    let hellos = words.iter().filter(|w| norm(&w.text) == "hello").count();
    assert!(
        (2..=5).contains(&hellos),
        "hello {hellos} times: {}",
        join_words(&words)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stuttered_reading_does_not_loop() {
    let dir = tempfile::tempdir().unwrap();
    let text = "So, and, and, and the the the first thing, and, and, and \
                you could say the, the, the second thing is that we, we, we \
                never stop, and, and, and start again. And then, and then, \
                and then we go on with the reading, I, I, I think.";
    let wav = speech16(dir.path(), "stutter", text);
    let words = transcribe(&wav).await;
    assert_no_loop(&words, "stutter");
    // Sampled fallback decodes vary between runs (see `own_model`), and
    // more under load: the stutters come out as "N, N, N" or "eye, eye"
    // and the word error rate has been 0.42 idle and 0.54 with two CPU
    // hogs beside the test. What must hold is that the reading between the
    // stutters is kept: at most two of its eight content words lost.
    let lost = lost_of(
        &words,
        &[
            "first", "thing", "second", "never", "stop", "start", "again", "reading",
        ],
    );
    assert!(lost.len() <= 2, "lost {lost:?}: {}", join_words(&words));
}

/// The words of `content` no word of `words` holds ("stop" is kept by
/// "stopped"; "first" by "NumberFirstSing", a CI run's decode that glued
/// the reading's word to the stutter's noise: the word is there).
fn lost_of<'a>(words: &[Word], content: &[&'a str]) -> Vec<&'a str> {
    let said: Vec<String> = words.iter().map(|w| norm(&w.text)).collect();
    content
        .iter()
        .copied()
        .filter(|c| !said.iter().any(|w| w.contains(c)))
        .collect()
}

/// The issue's case: "or," stuttered, which Whisper turns into a loop of
/// "R, R, R, …" at every temperature. The loop is cut and the words after
/// it are kept (the looping window is decoded again in halves). What the
/// fallback's sampling draws differs from run to run (CTranslate2 seeds one
/// generator per thread, once, and threads are reused), and more under
/// load: with two CPU hogs beside the test the words between the stutters
/// have come out as "Are you kind of a date That we ever stop?" and "You
/// could say that we've never stopped". A loop that ate the rest of the
/// reading would keep none of them; at least half must be there.
#[tokio::test(flavor = "multi_thread")]
async fn an_or_stutter_is_cut_and_the_words_after_it_kept() {
    let dir = tempfile::tempdir().unwrap();
    let text = "So, or, or, or, or, or, the the the first thing, or, or, or, \
                or, or, or, or you could say that we never stop. Or, or, or, \
                or, or start again.";
    let wav = speech16(dir.path(), "or", text);
    let words = transcribe(&wav).await;
    assert_no_loop(&words, "or stutter");
    let after = [
        "could", "say", "that", "we", "never", "stop", "start", "again",
    ];
    let lost = lost_of(&words, &after);
    assert!(lost.len() <= 4, "lost {lost:?}: {}", join_words(&words));
}

/// The last resort of a piece that loops at every temperature, however
/// small it is split: decoded with no run of 3 tokens written twice, the
/// "or" stutter (here the whole reading at once, which loops) ends and the
/// words after it are there, in one decode of the model alone.
#[test]
fn without_repeats_the_words_after_a_stutter_are_written() {
    let dir = tempfile::tempdir().unwrap();
    let text = "So, or, or, or, or, or, the the the first thing, or, or, or, \
                or, or, or, or you could say that we never stop. Or, or, or, \
                or, or start again.";
    let wav = speech16(dir.path(), "or", text);
    let samples = f32_samples(&wav);
    let model = own_model();
    let (_, mut results) = model
        .transcribe(
            &[&samples],
            &clipforge_actors::media::whisper::Decode {
                language: Some("en"),
                no_repeat: 3,
                ..Default::default()
            },
        )
        .expect("decode");
    let words = results.pop().expect("one window").words;
    eprintln!("without repeats: {}", join_words(&words));
    assert_no_loop(&words, "or stutter, without repeats");
    let said: Vec<String> = words.iter().map(|w| norm(&w.text)).collect();
    // What comes after the stutters (Whisper may still skip the short
    // "the the the first thing" between two of them; seen both ways).
    for kept in ["never", "stop", "again"] {
        assert!(
            said.iter().any(|w| w == kept),
            "{kept:?} lost: {}",
            join_words(&words)
        );
    }
}

fn f32_samples(wav: &Path) -> Vec<f32> {
    let out = common::run(
        Command::new("ffmpeg")
            .args(["-nostdin", "-v", "error", "-i"])
            .arg(wav)
            .args(["-f", "f32le", "-"]),
    );
    out.stdout
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// Without the VAD's help (a chord handed straight to the model), the
/// guards alone keep loops out: every window is decoded again at rising
/// temperatures or, probably silent, carries no words.
#[test]
fn the_model_alone_does_not_loop_on_a_chord() {
    let dir = tempfile::tempdir().unwrap();
    let wav = lavfi_wav(
        dir.path(),
        "chord",
        "aevalsrc=0.2*sin(2*PI*220*t)+0.15*sin(2*PI*277.2*t):s=16000",
        30.0,
    );
    let samples = f32_samples(&wav);
    let (_, results) = own_model()
        .transcribe_batch(&[&samples], Some("en"))
        .expect("decode");
    let r = &results[0];
    assert_no_loop(&r.words, "chord, model alone");
}
