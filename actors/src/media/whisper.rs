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
use super::whisper_guards::{avg_logprob, best_attempt, cut_loops, Attempt, BEST_OF, TEMPERATURES};
use super::whisper_words::words_from_alignment;
use crate::transcript::Word;

mod language;

pub const SAMPLE_RATE: usize = 16_000;
pub const N_FFT: usize = 400;
pub const HOP: usize = 160;
/// Samples in one 30 s window.
pub const WINDOW_SAMPLES: usize = 30 * SAMPLE_RATE;
/// Mel frames in one window.
pub const WINDOW_FRAMES: usize = WINDOW_SAMPLES / HOP;

/// Seed of CTranslate2's sampling (see `WhisperModel::load`).
const SAMPLING_SEED: u32 = 20_241_124;

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

/// How a batch is decoded (see [`WhisperModel::transcribe`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct Decode<'a> {
    /// The spoken language (an ISO code such as "en"); `None` detects it.
    pub language: Option<&'a str>,
    /// When detecting: the language the source declares (its metadata), a
    /// prior that the audio can overrule (see `language`).
    pub hint: Option<&'a str>,
    /// Text given to the decoder as what came before (e.g.
    /// `projects::stages::fillers::DISFLUENCY_PROMPT`, which makes Whisper
    /// write "um" and "uh"); `None`: no prompt.
    pub previous: Option<&'a str>,
    /// Forbids writing any run of this many tokens twice (0: no limit, as
    /// faster-whisper's default): the last resort for audio that loops at
    /// every temperature.
    pub no_repeat: usize,
}

/// One window's probability for every language the model knows (ISO codes).
pub(crate) type WindowLanguages = Vec<(String, f32)>;

/// The language a batch was decoded in.
#[derive(Clone, Debug, PartialEq)]
pub struct Detected {
    /// ISO code ("en").
    pub language: String,
    /// The model's probability for it, averaged over the batch's windows
    /// (weighted by their length); 1 when it was given.
    pub probability: f64,
}

impl Detected {
    fn given(language: &str) -> Self {
        Self {
            language: language.to_string(),
            probability: 1.0,
        }
    }
}

/// Words recognised in one window, times relative to the window's start.
#[derive(Clone, Debug, Default)]
pub struct WindowResult {
    pub words: Vec<Word>,
    /// Probability of the no-speech token at the first decoding step.
    pub no_speech_prob: f32,
    /// Of the kept decoding (see `whisper_guards`).
    pub avg_logprob: f64,
    pub compression_ratio: f64,
    /// The temperature the kept decoding was made at (0 = beam search).
    pub temperature: f32,
    /// The kept decoding held a repetition loop (cut from `words`): every
    /// temperature looped.
    pub looped: bool,
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
        // Sampling (temperature fallback) draws from CTranslate2's generator,
        // one per thread, seeded on first use. A fixed seed makes runs on an
        // idle machine repeat; threads are reused, so what a sampled decode
        // draws still depends on what ran on its thread before, and under
        // load it differs between runs (actors/tests/guards.rs).
        sys::set_random_seed(SAMPLING_SEED);
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

    /// Log-mel features of one window (≤ 30 s of 16 kHz samples), laid out
    /// `[n_mels][WINDOW_FRAMES]`, as faster-whisper's batched pipeline makes
    /// them: a frame per hop of the audio, normalised by their maximum (and
    /// that of the frame past the audio), then zeros to 30 s. (Whisper's reference pads the audio
    /// with silence before the transform instead; on real speech the words
    /// just before the end of a window, which are the words before a pause,
    /// were lost that way where faster-whisper kept them.)
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
        // faster-whisper's transform has a frame per hop and one past the
        // audio; its batched pipeline drops that last frame from the
        // features (`[..., :-1]`) after it counted in the maximum.
        let kept = (len as usize / HOP).min(WINDOW_FRAMES);
        for frame in 0..=kept {
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
                if frame < kept {
                    out[m * WINDOW_FRAMES + frame] = v;
                }
            }
        }
        let floor = max - 8.0;
        for band in out.chunks_mut(WINDOW_FRAMES) {
            for v in &mut band[..kept] {
                *v = (v.max(floor) + 4.0) / 4.0;
            }
        }
        out
    }

    /// The decoder's prompt: `previous` text (as `<|startofprev|>` and its
    /// tokens, the way Whisper conditions on earlier text) when given, then
    /// the start sequence; and the start sequence's ids for the alignment.
    fn prompt(&self, language: &str, previous: Option<&str>) -> Result<(Vec<String>, Vec<usize>)> {
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
        let mut prompt = Vec::new();
        if let Some(text) = previous.map(str::trim).filter(|t| !t.is_empty()) {
            prompt.push("<|startofprev|>".to_string());
            let tokens = self.tokenizer.encode(&format!(" {text}"))?;
            prompt.extend(
                tokens
                    .into_iter()
                    .filter(|t| !(t.starts_with("<|") && t.ends_with("|>"))),
            );
        }
        prompt.extend(start);
        prompt.push("<|notimestamps|>".into());
        Ok((prompt, ids))
    }

    /// Encoder output for `batch` windows of features. The encoder runs on
    /// sub-batches of [`ENCODE_CHUNK`] windows whose outputs are joined in
    /// `joined` (the returned view borrows it): its self-attention holds a
    /// `heads × 1500 × 1500` score matrix per window, and on 2 cores small
    /// sub-batches encode ~15 % faster per window than one batch of 8 (and
    /// peak memory drops by the difference), while the decoder is fastest on
    /// the whole batch.
    ///
    /// With `detect`, also returns every window's language probabilities
    /// (see `language`), read from the same encoder output.
    fn encode<'b>(
        &self,
        feats: &'b mut [f32],
        batch: usize,
        joined: &'b mut Vec<f32>,
        detect: bool,
    ) -> Result<(StorageView<'b>, Vec<WindowLanguages>)> {
        let per_window = self.n_mels * WINDOW_FRAMES;
        let mut languages = Vec::new();
        if batch <= ENCODE_CHUNK {
            let view = StorageView::new(&[batch, self.n_mels, WINDOW_FRAMES], feats, Device::CPU)?;
            let out = self.model.encode(&view, false)?;
            if detect {
                languages = self.window_languages(&out)?;
            }
            return Ok((out, languages));
        }
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
                if out.rank() != 3 || !size.is_multiple_of(n * frames) {
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
            if detect {
                languages.extend(self.window_languages(&out)?);
            }
            done += n;
        }
        Ok((StorageView::new(&shape, joined, Device::CPU)?, languages))
    }

    /// Decodes every window of `encoded` (`batch` windows) with the
    /// decoding guards of `whisper_guards`: beam search first, then only the
    /// windows that need it are decoded again, together, at each next
    /// temperature (sampling `BEST_OF` candidates), until none needs it. A
    /// window's loops are cut from the decoding finally kept.
    /// `no_repeat` > 0 forbids repeating any run of that many tokens (off
    /// in faster-whisper and here by default).
    fn decode_with_guards(
        &self,
        encoded: &StorageView<'_>,
        batch: usize,
        prompt: &[String],
        no_repeat: usize,
    ) -> Result<Vec<Attempt>> {
        let beam = WhisperOptions {
            beam_size: self.beam_size,
            no_repeat_ngram_size: no_repeat,
            return_scores: true,
            return_no_speech_prob: true,
            ..WhisperOptions::default()
        };
        let first = self
            .model
            .generate(encoded, &vec![prompt.to_vec(); batch], &beam)?;
        let mut attempts: Vec<Vec<Attempt>> = first
            .iter()
            .map(|g| Ok(vec![self.attempt(g, TEMPERATURES[0])?]))
            .collect::<Result<_>>()?;
        let mut failing: Vec<usize> = (0..batch)
            .filter(|&i| attempts[i][0].needs_fallback())
            .collect();
        let mut rows = Vec::new();
        for &temperature in &TEMPERATURES[1..] {
            if failing.is_empty() {
                break;
            }
            tracing::debug!(
                windows = ?failing,
                temperature,
                "whisper guards: decoding again"
            );
            if rows.is_empty() {
                rows = vec![0f32; encoded.size() as usize];
                copy_f32(encoded, &mut rows)?;
            }
            let per_window = rows.len() / batch;
            let mut picked: Vec<f32> = Vec::with_capacity(failing.len() * per_window);
            for &i in &failing {
                picked.extend_from_slice(&rows[i * per_window..(i + 1) * per_window]);
            }
            let frames = WINDOW_FRAMES / 2;
            let shape = [failing.len(), frames, per_window / frames];
            let view = StorageView::new(&shape, &mut picked, Device::CPU)?;
            let sampling = WhisperOptions {
                beam_size: 1,
                num_hypotheses: BEST_OF,
                sampling_topk: 0,
                sampling_temperature: temperature,
                no_repeat_ngram_size: no_repeat,
                return_scores: true,
                return_no_speech_prob: true,
                ..WhisperOptions::default()
            };
            let again =
                self.model
                    .generate(&view, &vec![prompt.to_vec(); failing.len()], &sampling)?;
            for (&i, g) in failing.iter().zip(&again) {
                attempts[i].push(self.attempt(g, temperature)?);
            }
            failing.retain(|&i| attempts[i].last().is_some_and(Attempt::needs_fallback));
        }
        attempts
            .into_iter()
            .map(|tries| {
                let last_ok = tries.last().is_some_and(|a| !a.needs_fallback());
                let mut kept = if last_ok {
                    tries.into_iter().last()
                } else {
                    best_attempt(tries)
                }
                .ok_or_else(|| anyhow!("no decoding for a window"))?;
                if kept.looped {
                    cut_loops(&mut kept.tokens);
                }
                Ok(kept)
            })
            .collect()
    }

    /// A decoding's best hypothesis with what the guards look at.
    fn attempt(&self, g: &sys::WhisperGenerationResult, temperature: f32) -> Result<Attempt> {
        let eot = self.eot as usize;
        let (ids, pieces) = match (g.sequences_ids.first(), g.sequences.first()) {
            (Some(ids), Some(pieces)) => (ids.as_slice(), pieces.as_slice()),
            _ => (&[][..], &[][..]),
        };
        let mut tokens = Vec::with_capacity(ids.len());
        let mut text_pieces = Vec::with_capacity(ids.len());
        for (&id, piece) in ids.iter().zip(pieces) {
            if id < eot {
                tokens.push(id);
                text_pieces.push(piece.clone());
            }
        }
        let text = self.tokenizer.decode(text_pieces)?;
        let score = g.scores.first().copied().unwrap_or(0.0);
        // faster-whisper's average is over every returned token.
        let avg = avg_logprob(score, ids.len());
        Ok(Attempt::new(
            tokens,
            &text,
            avg,
            g.no_speech_prob,
            temperature,
        ))
    }

    /// [`Self::transcribe`] in `language` (`None`: detected), with no prompt
    /// and no limit on repeats; returns the language used.
    pub fn transcribe_batch(
        &self,
        windows: &[&[f32]],
        language: Option<&str>,
    ) -> Result<(String, Vec<WindowResult>)> {
        let decode = Decode {
            language,
            ..Decode::default()
        };
        self.transcribe(windows, &decode)
            .map(|(detected, results)| (detected.language, results))
    }

    /// Transcribes a batch of windows (each ≤ 30 s) in one decoder pass (the
    /// encoder runs on sub-batches), in `decode.language`, or when `None` in
    /// the language found from every window of the batch (see `language`).
    /// Returns the language used and, per window, words with times relative
    /// to the window's first sample.
    pub fn transcribe(
        &self,
        windows: &[&[f32]],
        decode: &Decode<'_>,
    ) -> Result<(Detected, Vec<WindowResult>)> {
        let Decode {
            language,
            hint,
            previous,
            no_repeat,
        } = *decode;
        if let Some(language) = language {
            if !self.knows_language(language) {
                bail!("the model does not know language {language:?}");
            }
        }
        if windows.is_empty() {
            return Ok((Detected::given(language.unwrap_or("en")), Vec::new()));
        }
        let batch = windows.len();
        let t0 = std::time::Instant::now();
        let mut feats = Vec::with_capacity(batch * self.n_mels * WINDOW_FRAMES);
        for w in windows {
            feats.extend(self.features(w));
        }
        let t1 = std::time::Instant::now();
        let mut joined = Vec::new();
        let detect = language.is_none() && self.multilingual;
        let (encoded, per_window) = self.encode(&mut feats, batch, &mut joined, detect)?;
        let detected = match language {
            Some(l) => Detected::given(l),
            None if !self.multilingual => Detected::given("en"),
            None => {
                let secs: Vec<f64> = windows
                    .iter()
                    .map(|w| w.len() as f64 / SAMPLE_RATE as f64)
                    .collect();
                self.choose_language(&encoded, &per_window, &secs, hint)?
            }
        };
        let language = detected.language.clone();
        let t2 = std::time::Instant::now();
        let (prompt, start_ids) = self.prompt(&language, previous)?;
        let chosen = self.decode_with_guards(&encoded, batch, &prompt, no_repeat)?;
        let t3 = std::time::Instant::now();
        let text_tokens: Vec<Vec<usize>> = chosen.iter().map(|a| a.tokens.clone()).collect();
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
        for (i, (a, al)) in chosen.iter().zip(&alignments).enumerate() {
            let content_secs = windows[i].len() as f64 / SAMPLE_RATE as f64;
            // faster-whisper's silence rule (the classic hallucinated
            // "Thank you." on music or noise carries no words).
            let words = if a.is_silent() {
                Vec::new()
            } else {
                words_from_alignment(&self.tokenizer, &a.tokens, al, content_secs, &language)?
            };
            out.push(WindowResult {
                words,
                no_speech_prob: a.no_speech_prob,
                avg_logprob: a.avg_logprob,
                compression_ratio: a.compression_ratio,
                temperature: a.temperature,
                looped: a.looped,
            });
        }
        Ok((detected, out))
    }
}
