//! Whisper speech recognition on CTranslate2 (through `ct2rs`), with word
//! timestamps from cross-attention alignment.
//!
//! This drives `ct2rs::sys::Whisper` directly instead of `ct2rs::Whisper`
//! because the pipeline needs things the high-level type does not offer:
//! batches of variable-length, silence-trimmed windows (each padded to 30 s),
//! prompts without language and task tokens for English-only (`.en`) models,
//! alignment of text tokens only (timestamp tokens excluded), and per-window
//! no-speech filtering.

use std::path::Path;
use std::sync::Arc;

use anyhow::{anyhow, bail, Context, Result};
use ct2rs::sys::{self, ComputeType, Config, Device, StorageView, WhisperOptions};
use ct2rs::tokenizers::hf::Tokenizer as HfTokenizer;
use ct2rs::Tokenizer as _;
use rustfft::{num_complex::Complex, Fft, FftPlanner};

use super::ct2_backend::{copy_f32, select_mkl_layers};
use crate::transcript::Word;

pub const SAMPLE_RATE: usize = 16_000;
pub const N_FFT: usize = 400;
pub const HOP: usize = 160;
/// Samples in one 30 s window.
pub const WINDOW_SAMPLES: usize = 30 * SAMPLE_RATE;
/// Mel frames in one window.
pub const WINDOW_FRAMES: usize = WINDOW_SAMPLES / HOP;
/// Encoder output frames per second (the alignment resolution).
const TOKENS_PER_SECOND: f64 = 50.0;

/// Windows per encoder call (see `WhisperModel::encode`).
const ENCODE_CHUNK: usize = 2;

/// How the model is run.
#[derive(Clone, Debug)]
pub struct ModelOptions {
    /// Intra-op threads (0 = CTranslate2's default: all cores).
    pub threads: usize,
    /// "int8", "int8_float32", "float32" or "default" (the model's own type).
    pub compute_type: String,
    pub beam_size: usize,
}

impl Default for ModelOptions {
    fn default() -> Self {
        Self {
            threads: 0,
            compute_type: "int8".into(),
            beam_size: 5,
        }
    }
}

fn compute_type(name: &str) -> Result<ComputeType> {
    Ok(match name {
        "default" => ComputeType::DEFAULT,
        "auto" => ComputeType::AUTO,
        "int8" => ComputeType::INT8,
        "int8_float32" => ComputeType::INT8_FLOAT32,
        "int16" => ComputeType::INT16,
        "float32" => ComputeType::FLOAT32,
        other => bail!(
            "unknown compute type {other:?} (use int8, int8_float32, int16, float32 or default)"
        ),
    })
}

/// A loaded Whisper model. Cheap to share behind an `Arc`; calls are
/// serialised by CTranslate2's replica pool.
pub struct WhisperModel {
    model: sys::Whisper,
    tokenizer: HfTokenizer,
    /// Mel filter bank: per mel band, its first FFT bin and the weights of
    /// its non-zero span (each triangle covers a handful of the 201 bins, so
    /// this is ~40x fewer multiply-adds than the dense matrix, same sums).
    filters: Vec<(usize, Vec<f32>)>,
    n_mels: usize,
    window: Vec<f32>,
    fft: Arc<dyn Fft<f32>>,
    multilingual: bool,
    eot: u32,
    sot: String,
    beam_size: usize,
}

/// Words recognised in one window, times relative to the window's start.
#[derive(Clone, Debug, Default)]
pub struct WindowResult {
    pub words: Vec<Word>,
    pub no_speech_prob: f32,
}

impl WhisperModel {
    /// Loads a CTranslate2 Whisper model directory (`model.bin`, `config.json`,
    /// `tokenizer.json`, optional `preprocessor_config.json`).
    pub fn load(dir: &Path, opts: &ModelOptions) -> Result<Self> {
        if !dir.join("model.bin").is_file() {
            bail!(
                "no Whisper model at {} (model.bin missing): run `make setup` or set CLIPFORGE_MODEL_DIR",
                dir.display()
            );
        }
        select_mkl_layers();
        let config = Config {
            device: Device::CPU,
            compute_type: compute_type(&opts.compute_type)?,
            num_threads_per_replica: opts.threads,
            ..Config::default()
        };
        let model = sys::Whisper::new(dir, config)
            .with_context(|| format!("loading the Whisper model in {}", dir.display()))?;
        let tokenizer = HfTokenizer::new(dir).context("loading tokenizer.json")?;
        let n_mels = model.n_mels();
        let eot = tokenizer
            .token_to_id("<|endoftext|>")
            .ok_or_else(|| anyhow!("tokenizer has no <|endoftext|> token"))?;
        let dense: Vec<f64> =
            mel_spec::mel::mel(SAMPLE_RATE as f64, N_FFT, n_mels, None, None, false, true)
                .iter()
                .copied()
                .collect();
        let n_bins = N_FFT / 2 + 1;
        let filters = (0..n_mels)
            .map(|m| {
                let row = &dense[m * n_bins..(m + 1) * n_bins];
                let first = row.iter().position(|&v| v != 0.0).unwrap_or(0);
                let last = row.iter().rposition(|&v| v != 0.0).unwrap_or(0);
                let span = row[first..=last.max(first)].iter().map(|&v| v as f32);
                (first, span.collect())
            })
            .collect();
        // Periodic Hann window, as in Whisper's reference feature extractor.
        let window = (0..N_FFT)
            .map(|i| 0.5 - 0.5 * (2.0 * std::f32::consts::PI * i as f32 / N_FFT as f32).cos())
            .collect();
        let fft = FftPlanner::new().plan_fft_forward(N_FFT);
        Ok(Self {
            multilingual: model.is_multilingual(),
            model,
            tokenizer,
            filters,
            n_mels,
            window,
            fft,
            eot,
            sot: "<|startoftranscript|>".into(),
            beam_size: opts.beam_size.max(1),
        })
    }

    pub fn is_multilingual(&self) -> bool {
        self.multilingual
    }

    /// Whether transcription can be asked for `language` (an ISO code such
    /// as "en"): a multilingual model must have its token; an English-only
    /// model takes only "en".
    pub fn knows_language(&self, language: &str) -> bool {
        if self.multilingual {
            self.tokenizer
                .token_to_id(&format!("<|{language}|>"))
                .is_some()
        } else {
            language == "en"
        }
    }

    /// Log-mel features of one window (≤ 30 s of 16 kHz samples, zero-padded
    /// to 30 s), laid out `[n_mels][WINDOW_FRAMES]`, normalised as Whisper does.
    pub fn features(&self, samples: &[f32]) -> Vec<f32> {
        let n_bins = N_FFT / 2 + 1;
        let mut out = vec![0f32; self.n_mels * WINDOW_FRAMES];
        let mut buf = vec![Complex::new(0f32, 0f32); N_FFT];
        let mut scratch = vec![Complex::new(0f32, 0f32); self.fft.get_inplace_scratch_len()];
        let mut power = vec![0f32; n_bins];
        let half = (N_FFT / 2) as isize;
        let len = samples.len().min(WINDOW_SAMPLES) as isize;
        // Reflect padding at the start (centred frames); zeros past the end.
        let sample = |i: isize| -> f32 {
            let j = if i < 0 { -i } else { i };
            if j < len {
                samples[j as usize]
            } else {
                0.0
            }
        };
        let mut max = f32::NEG_INFINITY;
        for frame in 0..WINDOW_FRAMES {
            let centre = (frame * HOP) as isize;
            for (k, c) in buf.iter_mut().enumerate() {
                *c = Complex::new(sample(centre - half + k as isize) * self.window[k], 0.0);
            }
            self.fft.process_with_scratch(&mut buf, &mut scratch);
            for (p, c) in power.iter_mut().zip(&buf) {
                *p = c.norm_sqr();
            }
            for (m, (first, weights)) in self.filters.iter().enumerate() {
                let e: f32 = weights
                    .iter()
                    .zip(&power[*first..])
                    .map(|(a, b)| a * b)
                    .sum();
                let v = e.max(1e-10).log10();
                max = max.max(v);
                out[m * WINDOW_FRAMES + frame] = v;
            }
        }
        let floor = max - 8.0;
        for v in &mut out {
            *v = (v.max(floor) + 4.0) / 4.0;
        }
        out
    }

    /// The most likely language of encoded windows, as an ISO code ("en"):
    /// the one with the highest probability summed over the windows.
    /// CTranslate2 sees the encoder output and does not encode again.
    fn detect_language(&self, encoded: &StorageView) -> Result<String> {
        if !self.multilingual {
            return Ok("en".into());
        }
        let mut totals: Vec<(String, f32)> = Vec::new();
        for langs in self.model.detect_language(encoded)? {
            for l in langs {
                match totals.iter_mut().find(|(name, _)| *name == l.language) {
                    Some((_, p)) => *p += l.probability,
                    None => totals.push((l.language, l.probability)),
                }
            }
        }
        let best = totals
            .into_iter()
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .ok_or_else(|| anyhow!("language detection returned nothing"))?;
        Ok(best
            .0
            .trim_start_matches("<|")
            .trim_end_matches("|>")
            .to_string())
    }

    fn prompt(&self, language: &str) -> (Vec<String>, Vec<usize>) {
        // The alignment's start sequence is the prompt without <|notimestamps|>.
        let start: Vec<String> = if self.multilingual {
            vec![
                self.sot.clone(),
                format!("<|{language}|>"),
                "<|transcribe|>".into(),
            ]
        } else {
            vec![self.sot.clone()]
        };
        let ids = start
            .iter()
            .map(|t| self.tokenizer.token_to_id(t).unwrap_or(0) as usize)
            .collect();
        let mut prompt = start;
        prompt.push("<|notimestamps|>".into());
        (prompt, ids)
    }

    /// Encoder output for `batch` windows of features. The encoder runs on
    /// sub-batches of [`ENCODE_CHUNK`] windows whose outputs are joined in
    /// `joined` (the returned view borrows it): its self-attention holds a
    /// `heads × 1500 × 1500` score matrix per window, and on 2 cores small
    /// sub-batches encode ~15 % faster per window than one batch of 8 (and
    /// peak memory drops by the difference), while the decoder is fastest on
    /// the whole batch.
    ///
    /// With `detect`, also returns the language detected from the first
    /// sub-batch's output.
    fn encode<'b>(
        &self,
        feats: &'b mut [f32],
        batch: usize,
        joined: &'b mut Vec<f32>,
        detect: bool,
    ) -> Result<(StorageView<'b>, Option<String>)> {
        let per_window = self.n_mels * WINDOW_FRAMES;
        if batch <= ENCODE_CHUNK {
            let view = StorageView::new(&[batch, self.n_mels, WINDOW_FRAMES], feats, Device::CPU)?;
            let out = self.model.encode(&view, false)?;
            let language = if detect {
                Some(self.detect_language(&out)?)
            } else {
                None
            };
            return Ok((out, language));
        }
        let mut language = None;
        let mut done = 0;
        let mut shape = [batch, 0, 0];
        for chunk in feats.chunks_mut(ENCODE_CHUNK * per_window) {
            let n = chunk.len() / per_window;
            let view = StorageView::new(&[n, self.n_mels, WINDOW_FRAMES], chunk, Device::CPU)?;
            let out = self.model.encode(&view, false)?;
            let size = out.size() as usize;
            if joined.is_empty() {
                // [n, frames, d_model] with frames = WINDOW_FRAMES / 2.
                let frames = WINDOW_FRAMES / 2;
                if out.rank() != 3 || size % (n * frames) != 0 {
                    bail!("unexpected encoder output ({size} values for {n} windows)");
                }
                shape = [batch, frames, size / (n * frames)];
                joined.resize(batch * frames * shape[2], 0.0);
            }
            let start = done * shape[1] * shape[2];
            if size != n * shape[1] * shape[2] {
                bail!("unexpected encoder output ({size} values for {n} windows)");
            }
            copy_f32(&out, &mut joined[start..start + size])?;
            if detect && done == 0 {
                language = Some(self.detect_language(&out)?);
            }
            done += n;
        }
        Ok((StorageView::new(&shape, joined, Device::CPU)?, language))
    }

    /// Transcribes a batch of windows (each ≤ 30 s) in one decoder pass (the
    /// encoder runs on sub-batches), in `language`, or when `None` in the
    /// language detected from the first sub-batch's encoder output. Returns the language used and, per
    /// window, words with times relative to the window's first sample.
    pub fn transcribe_batch(
        &self,
        windows: &[&[f32]],
        language: Option<&str>,
    ) -> Result<(String, Vec<WindowResult>)> {
        if let Some(language) = language {
            if self.multilingual
                && self
                    .tokenizer
                    .token_to_id(&format!("<|{language}|>"))
                    .is_none()
            {
                bail!("the model does not know language {language:?}");
            }
        }
        if windows.is_empty() {
            return Ok((language.unwrap_or("en").to_string(), Vec::new()));
        }
        let batch = windows.len();
        let t0 = std::time::Instant::now();
        let mut feats = Vec::with_capacity(batch * self.n_mels * WINDOW_FRAMES);
        for w in windows {
            feats.extend(self.features(w));
        }
        let t1 = std::time::Instant::now();
        let mut joined = Vec::new();
        let (encoded, detected) =
            self.encode(&mut feats, batch, &mut joined, language.is_none())?;
        let language = match (language, detected) {
            (Some(l), _) => l.to_string(),
            (None, Some(l)) => l,
            (None, None) => bail!("language detection returned nothing"),
        };
        let t2 = std::time::Instant::now();
        let (prompt, start_ids) = self.prompt(&language);
        let options = WhisperOptions {
            beam_size: self.beam_size,
            return_scores: true,
            return_no_speech_prob: true,
            ..WhisperOptions::default()
        };
        let generated = self
            .model
            .generate(&encoded, &vec![prompt; batch], &options)?;
        let t3 = std::time::Instant::now();
        let eot = self.eot as usize;
        let text_tokens: Vec<Vec<usize>> = generated
            .iter()
            .map(|g| {
                g.sequences_ids
                    .first()
                    .map(|ids| ids.iter().copied().filter(|&id| id < eot).collect())
            })
            .map(Option::unwrap_or_default)
            .collect();
        let num_frames: Vec<usize> = windows
            .iter()
            .map(|w| w.len().div_ceil(HOP).clamp(1, WINDOW_FRAMES))
            .collect();
        let alignments = self
            .model
            .align(&encoded, &start_ids, &text_tokens, &num_frames, 7)?;
        let t4 = std::time::Instant::now();
        tracing::debug!(
            batch,
            features_ms = (t1 - t0).as_millis() as u64,
            encode_ms = (t2 - t1).as_millis() as u64,
            generate_ms = (t3 - t2).as_millis() as u64,
            align_ms = (t4 - t3).as_millis() as u64,
            "whisper batch"
        );

        let mut out = Vec::with_capacity(batch);
        for (i, (g, al)) in generated.iter().zip(&alignments).enumerate() {
            let content_secs = windows[i].len() as f64 / SAMPLE_RATE as f64;
            let score = g.scores.first().copied().unwrap_or(0.0);
            // Whisper's own rule: a window that is probably silence and was
            // decoded with low confidence carries no words (avoids the
            // classic hallucinated "Thank you." on music or noise).
            if g.no_speech_prob > 0.6 && score < -1.0 {
                out.push(WindowResult {
                    words: Vec::new(),
                    no_speech_prob: g.no_speech_prob,
                });
                continue;
            }
            let words = self.words_from_alignment(&text_tokens[i], al, content_secs)?;
            out.push(WindowResult {
                words,
                no_speech_prob: g.no_speech_prob,
            });
        }
        Ok((language, out))
    }

    fn words_from_alignment(
        &self,
        tokens: &[usize],
        alignment: &sys::WhisperAlignmentResult,
        content_secs: f64,
    ) -> Result<Vec<Word>> {
        if tokens.is_empty() {
            return Ok(Vec::new());
        }
        // Time at which the alignment path first reaches each text token
        // (index `tokens.len()` is the end-of-text token).
        let mut jump = vec![f64::NAN; tokens.len() + 1];
        for pair in &alignment.alignments {
            let k = pair.token_x;
            if k >= 0 && (k as usize) < jump.len() && jump[k as usize].is_nan() {
                jump[k as usize] = pair.frame_x as f64 / TOKENS_PER_SECOND;
            }
        }
        let mut last = 0.0;
        for t in &mut jump {
            if t.is_nan() || *t < last {
                *t = last;
            }
            last = *t;
        }
        let probs = &alignment.text_token_probs;

        let pieces: Vec<String> = tokens
            .iter()
            .map(|&id| self.tokenizer.id_to_token(id as u32).unwrap_or_default())
            .collect();
        let groups = split_words(&pieces);
        let mut words: Vec<Word> = Vec::with_capacity(groups.len());
        for range in groups {
            let text = self.tokenizer.decode(pieces[range.clone()].to_vec())?;
            let text = text.trim();
            if text.is_empty() {
                continue;
            }
            let p = &probs[range.start.min(probs.len())..range.end.min(probs.len())];
            let probability = if p.is_empty() {
                0.0
            } else {
                p.iter().sum::<f32>() / p.len() as f32
            };
            words.push(Word {
                text: text.to_string(),
                start: jump[range.start].min(content_secs),
                end: jump[range.end].min(content_secs),
                probability,
            });
        }
        let mut words = merge_punctuation(words);
        cap_long_words(&mut words);
        Ok(words)
    }
}

/// Splits byte-level BPE pieces ("Ġhello", ",") into word token ranges: a
/// piece starting with a space marker begins a new word.
fn split_words(pieces: &[String]) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, p) in pieces.iter().enumerate() {
        if i > start && (p.starts_with('Ġ') || p.starts_with(' ')) {
            out.push(start..i);
            start = i;
        }
    }
    if start < pieces.len() {
        out.push(start..pieces.len());
    }
    out
}

fn is_punctuation(text: &str) -> bool {
    !text.is_empty() && text.chars().all(|c| !c.is_alphanumeric())
}

/// Attaches punctuation-only "words" to their neighbour: opening marks to
/// the next word, everything else to the previous one (as Whisper does).
fn merge_punctuation(words: Vec<Word>) -> Vec<Word> {
    let mut out: Vec<Word> = Vec::with_capacity(words.len());
    let mut pending_prefix: Option<Word> = None;
    for mut w in words {
        if is_punctuation(&w.text) {
            let opening = w.text.chars().all(|c| "\"'“¿([{-«‘".contains(c));
            match out.last_mut() {
                Some(prev) if !opening => {
                    prev.text.push_str(&w.text);
                    continue;
                }
                _ => {
                    pending_prefix = Some(w);
                    continue;
                }
            }
        }
        if let Some(p) = pending_prefix.take() {
            w.text = format!("{}{}", p.text, w.text);
            w.start = w.start.min(p.start);
        }
        out.push(w);
    }
    if let (Some(p), Some(prev)) = (pending_prefix, out.last_mut()) {
        prev.text.push_str(&p.text);
    }
    out
}

/// Alignment can stretch a word over a following pause; cap durations at
/// twice the median word length (at most 1.4 s), like faster-whisper.
fn cap_long_words(words: &mut [Word]) {
    let mut durations: Vec<f64> = words
        .iter()
        .map(|w| w.end - w.start)
        .filter(|d| *d > 0.0)
        .collect();
    if durations.is_empty() {
        return;
    }
    durations.sort_by(|a, b| a.total_cmp(b));
    let median = durations[durations.len() / 2].min(0.7);
    let max = 2.0 * median;
    for w in words.iter_mut() {
        if w.end - w.start > max {
            // A long first word usually starts late: keep its end.
            w.start = w.start.max(w.end - max);
        }
    }
    for i in 1..words.len() {
        if words[i].start < words[i - 1].end {
            words[i].start = words[i - 1].end.min(words[i].end);
        }
    }
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

    #[test]
    fn pieces_split_on_space_marker() {
        let pieces: Vec<String> = ["ĠHello", ",", "Ġwor", "ld", "!"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(split_words(&pieces), vec![0..2, 2..5]);
    }

    #[test]
    fn punctuation_merges_into_neighbours() {
        let merged = merge_punctuation(vec![
            w("\"", 0.0, 0.1),
            w("Hi", 0.1, 0.3),
            w(",", 0.3, 0.3),
            w("you", 0.4, 0.6),
        ]);
        let texts: Vec<_> = merged.iter().map(|w| w.text.as_str()).collect();
        assert_eq!(texts, ["\"Hi,", "you"]);
        assert_eq!(merged[0].start, 0.0);
    }

    #[test]
    fn long_words_are_capped() {
        let mut words = vec![w("a", 0.0, 0.3), w("b", 0.3, 0.6), w("c", 0.6, 5.0)];
        cap_long_words(&mut words);
        assert!(words[2].end - words[2].start <= 0.6 + 1e-9);
        assert_eq!(words[2].end, 5.0);
    }
}
