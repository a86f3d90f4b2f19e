//! Transcribe: 16 kHz mono PCM streamed from ffmpeg, cut into speech windows
//! (≤ 30 s, silences dropped), recognised by Whisper in batches, with word
//! timestamps mapped back onto the source's timeline. Windows without
//! syllables are not decoded, words in a window's voiceless stretches are
//! dropped, a window that loops at every temperature is decoded again in
//! halves, and repetition loops are cut (see `media::whisper_guards`).

use std::path::Path;
use std::sync::Arc;

use super::fillers::DISFLUENCY_PROMPT;
use super::{StageCtx, StageError};
use crate::media::audio::PcmStream;
use crate::media::vad::{quiet_middle, SpeechWindows, Window};
use crate::media::voicing::Voicing;
use crate::media::whisper::{Decode, WhisperModel, SAMPLE_RATE};
use crate::media::whisper_guards::cut_loops_by;
use crate::transcript::{Transcript, Word};

#[derive(Clone, Debug)]
pub struct TranscribeOptions {
    /// ISO code, the user's choice; `None` detects the language from the
    /// first batch of speech windows (see `media::whisper::language`).
    pub language: Option<String>,
    /// When detecting: the language the source declares (its metadata), a
    /// prior the audio can overrule.
    pub language_hint: Option<String>,
    /// Seconds into the source where processing starts.
    pub start: f64,
    /// Seconds to process (`None` = to the end).
    pub duration: Option<f64>,
    /// Length of the processed audio, for progress (e.g. from ffprobe).
    pub expected_secs: f64,
    /// Windows per Whisper call.
    pub batch_size: usize,
    /// Ask Whisper to write disfluencies ("um", "uh"; see
    /// `fillers::DISFLUENCY_PROMPT`), for filler removal. Off: decoding
    /// is unchanged.
    pub keep_fillers: bool,
}

impl Default for TranscribeOptions {
    fn default() -> Self {
        Self {
            language: None,
            language_hint: None,
            start: 0.0,
            duration: None,
            expected_secs: 0.0,
            batch_size: 8,
            keep_fillers: false,
        }
    }
}

#[derive(Clone, Debug)]
pub struct TranscribeOutput {
    /// Words and sentences on the source's timeline.
    pub transcript: Transcript,
    /// RMS dBFS per 100 ms from `start` (for the cut stage's scoring).
    pub loudness_db: Vec<f32>,
    /// Seconds spent inside the model (for benchmarks).
    pub model_secs: f64,
}

pub async fn run(
    input: &Path,
    model: Arc<WhisperModel>,
    opts: TranscribeOptions,
    ctx: &StageCtx,
) -> Result<TranscribeOutput, StageError> {
    run_loading(input, async { Ok(model) }, opts, ctx).await
}

/// [`run`] with the model perhaps still loading: the audio is extracted and
/// cut into windows meanwhile (the first batch is ready when the model is).
/// A language the model does not know is detected instead.
pub async fn run_loading(
    input: &Path,
    model: impl std::future::Future<Output = Result<Arc<WhisperModel>, StageError>>,
    mut opts: TranscribeOptions,
    ctx: &StageCtx,
) -> Result<TranscribeOutput, StageError> {
    ctx.check_cancelled()?;
    let stream = PcmStream::open(input, opts.start, opts.duration)
        .map_err(|e| StageError::tool("ffmpeg", format!("cannot start audio extraction: {e}")))?;
    let batch_size = opts.batch_size.max(1);
    // Audio decoding and window cutting run on their own thread, at most two
    // batches ahead of the model (≤ 16 × 30 s of samples, ~30 MB), so
    // ffmpeg's work overlaps recognition instead of waiting for it.
    let (tx, rx) = std::sync::mpsc::sync_channel::<Window>(2 * batch_size);
    // Stops the reader (and its ffmpeg) when the model fails to load.
    let stop = ctx.cancel.child_token();
    let reader = {
        let stop = stop.clone();
        std::thread::Builder::new()
            .name("transcribe-audio".into())
            .spawn(move || read_windows(stream, tx, stop))
            .map_err(|e| StageError::io("starting the audio reader", e))?
    };
    let model = match model.await {
        Ok(m) => m,
        Err(e) => {
            stop.cancel();
            drop(rx);
            let _ = crate::tasks::blocking(move || reader.join()).await;
            return Err(e);
        }
    };
    opts.language = opts.language.filter(|l| model.knows_language(l));
    let ctx2 = ctx.clone();
    crate::tasks::blocking(move || {
        let output = recognise(rx, &model, &opts, &ctx2, reader);
        // What the model's tensors took stays in the heap for reuse until
        // given back (media::heap).
        crate::media::heap::release();
        let output = output?;
        ctx2.progress.done();
        Ok(output)
    })
    .await
}

/// What the audio thread hands back at the end: samples read and loudness.
type AudioEnd = Result<(u64, Vec<f32>), StageError>;

/// The audio thread: PCM from ffmpeg, cut into speech windows, sent in
/// order. Stops (and kills ffmpeg) when cancelled or when the receiver is
/// gone.
fn read_windows(
    mut stream: PcmStream,
    tx: std::sync::mpsc::SyncSender<Window>,
    cancel: tokio_util::sync::CancellationToken,
) -> AudioEnd {
    let mut splitter = SpeechWindows::new();
    let mut out: Vec<Window> = Vec::new();
    let mut block = Vec::with_capacity(SAMPLE_RATE);
    loop {
        if cancel.is_cancelled() {
            stream.kill();
            return Err(StageError::Cancelled);
        }
        block.clear();
        let n = stream
            .read_into(&mut block, SAMPLE_RATE)
            .map_err(|e| StageError::io("reading audio", e))?;
        if n == 0 {
            splitter.finish(&mut out);
        } else {
            splitter.push(&block, &mut out);
        }
        for w in out.drain(..) {
            if tx.send(w).is_err() {
                stream.kill();
                return Err(StageError::Cancelled);
            }
        }
        if n == 0 {
            break;
        }
    }
    drop(tx);
    let read = stream.samples_read;
    let loudness_db = stream.finish().map_err(|e| {
        if read == 0 {
            StageError::InvalidInput(format!("the audio track cannot be decoded: {e}"))
        } else {
            StageError::tool("ffmpeg", format!("audio extraction: {e}"))
        }
    })?;
    Ok((read, loudness_db))
}

/// Recognises the windows the audio thread sends, `batch_size` at a time.
fn recognise(
    rx: std::sync::mpsc::Receiver<Window>,
    model: &WhisperModel,
    opts: &TranscribeOptions,
    ctx: &StageCtx,
    reader: std::thread::JoinHandle<AudioEnd>,
) -> Result<TranscribeOutput, StageError> {
    let join = |reader: std::thread::JoinHandle<AudioEnd>| -> AudioEnd {
        reader
            .join()
            .map_err(|_| StageError::Model("the audio reader stopped".into()))?
    };
    let batch_size = opts.batch_size.max(1);
    let expected = opts.expected_secs.max(1.0);
    let previous = opts.keep_fillers.then_some(DISFLUENCY_PROMPT);
    let mut pending: Vec<Window> = Vec::new();
    let mut words: Vec<Word> = Vec::new();
    let mut language = opts.language.clone();
    let mut language_probability = opts.language.as_ref().map(|_| 1.0);
    let mut model_secs = 0.0;
    let mut reader = Some(reader);
    let mut audio: Option<(u64, Vec<f32>)> = None;
    while audio.is_none() || !pending.is_empty() {
        if ctx.cancel.is_cancelled() {
            // The reader sees the token (or the closed channel), kills
            // ffmpeg and ends; wait for it so no child outlives the stage.
            drop(rx);
            if let Some(r) = reader.take() {
                let _ = join(r);
            }
            return Err(StageError::Cancelled);
        }
        if audio.is_none() {
            match rx.recv() {
                // No syllable (noise, breaths, a held tone): nothing to
                // decode, and nothing for Whisper to hallucinate on.
                Ok(w) if !w.voicing.is_speech() => {
                    tracing::debug!(
                        offset = w.offset,
                        secs = w.duration(),
                        "window without speech skipped"
                    );
                }
                Ok(w) => pending.push(w),
                // The reader finished: every window has been received.
                Err(_) => match reader.take() {
                    Some(r) => audio = Some(join(r)?),
                    None => return Err(StageError::Model("the audio reader is gone".into())),
                },
            }
        }
        if pending.len() >= batch_size || (audio.is_some() && !pending.is_empty()) {
            let batch: Vec<Window> = pending.drain(..pending.len().min(batch_size)).collect();
            let started = std::time::Instant::now();
            let slices: Vec<&[f32]> = batch.iter().map(|w| w.samples.as_slice()).collect();
            // The first batch detects the language when none was given; the
            // rest of the input is decoded in it.
            let decode = Decode {
                language: language.as_deref(),
                hint: opts.language_hint.as_deref(),
                previous,
                no_repeat: 0,
            };
            let recognised = model.transcribe(&slices, &decode);
            let (detected, results) = match recognised {
                Ok(r) => r,
                Err(e) => {
                    drop(rx);
                    if let Some(r) = reader.take() {
                        let _ = join(r);
                    }
                    return Err(StageError::Model(format!("{e:#}")));
                }
            };
            if language.is_none() {
                language_probability = Some(detected.probability);
            }
            language = Some(detected.language);
            model_secs += started.elapsed().as_secs_f64();
            for (w, r) in batch.iter().zip(results) {
                let base = opts.start + w.offset;
                let lang = language.as_deref().unwrap_or("en");
                let decoded = if r.looped {
                    match in_halves(model, &w.samples, lang, previous, SPLIT_DEPTH) {
                        Ok(words) => words,
                        Err(e) => {
                            drop(rx);
                            if let Some(r) = reader.take() {
                                let _ = join(r);
                            }
                            return Err(StageError::Model(format!("{e:#}")));
                        }
                    }
                } else {
                    r.words
                };
                let voiced = in_voice(decoded, &w.voicing);
                words.extend(voiced.into_iter().map(|mut word| {
                    word.start += base;
                    word.end += base;
                    word
                }));
            }
            let done = batch.last().map(|w| w.offset + w.duration()).unwrap_or(0.0);
            ctx.progress.set(0.99 * done / expected);
        }
    }
    let (read, loudness_db) = audio.unwrap_or_default();
    // Each window's loops were cut; a loop can still run across windows.
    if cut_loops_by(&mut words, |a, b| {
        normalized(&a.text) == normalized(&b.text)
    }) {
        tracing::debug!("a repetition loop across windows was cut");
    }
    let mut transcript = Transcript {
        language: language.unwrap_or_else(|| "en".into()),
        language_probability,
        duration: read as f64 / SAMPLE_RATE as f64,
        sentences: Vec::new(),
        words: monotonic(words),
    };
    transcript.rebuild_sentences();
    Ok(TranscribeOutput {
        transcript,
        loudness_db,
        model_secs,
    })
}

/// How many times a looping window is halved at most.
const SPLIT_DEPTH: u32 = 2;
/// The run of tokens a piece that loops at the end of the splitting may not
/// write twice (3: "or, or," is written, a third " or" is not).
const NO_REPEAT: usize = 3;
/// Halves shorter than this are not split again.
const MIN_SPLIT_SECS: f64 = 4.0;

/// A window whose decoding looped at every temperature is decoded again in
/// two halves, split at its quietest point near the middle (with less
/// context Whisper rarely keeps looping); a half that still loops is split
/// again, `depth` times at most. Words have times from `samples`' start.
fn in_halves(
    model: &WhisperModel,
    samples: &[f32],
    language: &str,
    previous: Option<&str>,
    depth: u32,
) -> anyhow::Result<Vec<Word>> {
    let cut = quiet_middle(samples);
    let halves = [&samples[..cut], &samples[cut..]];
    tracing::debug!(
        secs = samples.len() as f64 / SAMPLE_RATE as f64,
        depth,
        "looping window decoded again in halves"
    );
    let decode = Decode {
        language: Some(language),
        previous,
        ..Decode::default()
    };
    let (_, results) = model.transcribe(&halves, &decode)?;
    let mut out = Vec::new();
    for (k, (half, r)) in halves.iter().zip(results).enumerate() {
        let base = if k == 0 {
            0.0
        } else {
            cut as f64 / SAMPLE_RATE as f64
        };
        let splittable = half.len() as f64 >= 2.0 * MIN_SPLIT_SECS * SAMPLE_RATE as f64;
        let words = if r.looped && depth > 1 && splittable {
            in_halves(model, half, language, previous, depth - 1)?
        } else if r.looped {
            // Still looping with this little context: decoded once more
            // with no run of tokens written twice, which ends the loop and
            // goes on with the words after it.
            tracing::debug!(
                secs = half.len() as f64 / SAMPLE_RATE as f64,
                "looping piece decoded again without repeats"
            );
            let strict = Decode {
                no_repeat: NO_REPEAT,
                ..decode
            };
            let (_, mut again) = model.transcribe(&[half], &strict)?;
            again.pop().map(|r| r.words).unwrap_or(r.words)
        } else {
            r.words
        };
        out.extend(words.into_iter().map(|mut w| {
            w.start += base;
            w.end += base;
            w
        }));
    }
    Ok(out)
}

/// Words not in a window's voiceless stretches. A word that starts and
/// ends more than 0.2 s inside one was not spoken there (a hallucination on
/// breath or noise) and is dropped. A word with one edge in a pause was
/// stretched into it by the alignment (a sentence-final word trailing off
/// into the pause after it, a first word into the pause before): it is
/// kept, its edge brought back to 0.2 s into the pause. (A rule on the
/// word's middle dropped such sentence-final words: a 0.4 s word whose
/// alignment ran 1.5 s into the pause had its middle there.)
fn in_voice(words: Vec<Word>, voicing: &Voicing) -> Vec<Word> {
    const MARGIN: f64 = 0.2;
    words
        .into_iter()
        .filter_map(|mut w| {
            for &(a, b) in &voicing.silences {
                let (from, to) = (a + MARGIN, b - MARGIN);
                if from >= to {
                    continue;
                }
                if from < w.start && w.end < to {
                    tracing::debug!(word = %w.text, start = w.start, "word in silence dropped");
                    return None;
                }
                if w.start < from && from < w.end {
                    w.end = from;
                } else if w.start < to && to < w.end && w.start > from {
                    w.start = to;
                }
            }
            Some(w)
        })
        .collect()
}

/// A word's letters and digits, lower-cased (how loops are compared).
fn normalized(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// Word times never go backwards and every word has end ≥ start.
fn monotonic(mut words: Vec<Word>) -> Vec<Word> {
    let mut last = f64::NEG_INFINITY;
    for w in &mut words {
        if w.start < last {
            w.start = last;
        }
        if w.end < w.start {
            w.end = w.start;
        }
        last = w.start;
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(text: &str, start: f64, end: f64) -> Word {
        Word {
            text: text.into(),
            start,
            end,
            probability: 0.9,
        }
    }

    fn voicing(silences: &[(f64, f64)]) -> Voicing {
        Voicing {
            syllables: 10,
            silences: silences.to_vec(),
        }
    }

    #[test]
    fn a_word_inside_a_pause_is_dropped_one_reaching_into_it_kept() {
        // Voice until 2.1 s ("document." trails off), a pause from 2.4 s
        // (300 ms after the last voiced frame) to 4.0 s.
        let v = voicing(&[(2.4, 4.0)]);
        let words = vec![
            w("perfect", 1.2, 1.6),
            // The alignment ran the last word 1.5 s into the pause: its
            // middle (2.65 s) lies there, its start does not.
            w("document.", 1.6, 3.7),
            // Nothing was said here.
            w("Thank", 2.8, 3.1),
            // The next sentence's first word, stretched back into the pause.
            w("And", 3.0, 4.3),
        ];
        let kept = in_voice(words, &v);
        let texts: Vec<&str> = kept.iter().map(|w| w.text.as_str()).collect();
        assert_eq!(texts, ["perfect", "document.", "And"]);
        assert!((kept[1].end - 2.6).abs() < 1e-9, "{:?}", kept[1]);
        assert_eq!(kept[1].start, 1.6);
        assert!((kept[2].start - 3.8).abs() < 1e-9, "{:?}", kept[2]);
        assert_eq!(kept[2].end, 4.3);
    }
}
