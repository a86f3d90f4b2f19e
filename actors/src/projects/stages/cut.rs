//! Cut: scene changes from ffmpeg, then candidate clips on sentence
//! boundaries scored from transcript and signal features (see `score`), with
//! an optional LLM re-ranker, both steered by the project's prompt. With
//! `skip_cuts`, one clip covers the range.

use std::path::Path;

use super::fillers;
pub use super::plan::ClipPlan;
use super::quiet;
use super::rerank::{self, RerankConfig};
use super::score::{self, Signals};
use super::steer::Prompt;
use super::{StageCtx, StageError};
use crate::media::audio::LOUDNESS_STEP;
use crate::media::scenes;
use crate::transcript::{display_duration, join_words, Transcript};

#[derive(Clone, Debug)]
pub struct CutOptions {
    /// (min, max) clip length in seconds, see [`score::preset_range`].
    pub range: (f64, f64),
    pub max_clips: usize,
    pub skip_cuts: bool,
    /// Seconds into the source where processing started (loudness index 0).
    pub start: f64,
    /// Seconds processed.
    pub duration: f64,
    pub rerank: Option<RerankConfig>,
    /// What the user wants clips about (`steer.rs`); also given to the re-ranker.
    pub prompt: Option<String>,
    /// Clips are chosen and titled on the transcript without its filler
    /// words, and each plan lists the spans to cut out for them (`fillers`).
    pub remove_fillers: bool,
    /// The length is the service's choice (the `auto` preset): when no clip
    /// of `range` fits, shorter clips are sought, and speech shorter than
    /// any clip is one clip (see [`short_input`]). Otherwise that is an
    /// error the user can act on.
    pub flexible_range: bool,
}

/// The clips of `transcript`. `scenes_ahead`: the range's scene changes
/// (seconds from `opts.start`) when they were found ahead (`ahead.rs`);
/// else they are looked for here.
pub async fn run(
    input: &Path,
    transcript: &Transcript,
    loudness_db: &[f32],
    scenes_ahead: Option<Vec<f64>>,
    opts: &CutOptions,
    ctx: &StageCtx,
) -> Result<Vec<ClipPlan>, StageError> {
    ctx.check_cancelled()?;
    let mut plans = if opts.remove_fillers {
        without_fillers(input, transcript, loudness_db, scenes_ahead, opts, ctx).await?
    } else {
        plan(input, transcript, loudness_db, scenes_ahead, opts, ctx).await?
    };
    if !opts.skip_cuts {
        // Every cut at the quietest point of its silence (`quiet.rs`).
        let (input, t) = (input.to_path_buf(), transcript.clone());
        let span = (opts.start, opts.start + opts.duration);
        plans = crate::tasks::blocking(move || {
            quiet::snap_plans(&input, &t, span, &mut plans);
            plans
        })
        .await;
    }
    if opts.remove_fillers {
        let marks = fillers::filler_marks(&transcript.words);
        for p in &mut plans {
            p.cuts = fillers::clip_cuts(&transcript.words, &marks, p.start, p.end);
        }
    }
    Ok(plans)
}

/// [`plan`] on the words without fillers, mapped back onto the whole
/// transcript (the fillers each plan cuts out are listed by [`run`]).
async fn without_fillers(
    input: &Path,
    transcript: &Transcript,
    loudness_db: &[f32],
    scenes_ahead: Option<Vec<f64>>,
    opts: &CutOptions,
    ctx: &StageCtx,
) -> Result<Vec<ClipPlan>, StageError> {
    // Choose and title clips on the words without fillers; then map the
    // plans back onto the whole transcript.
    let (clean, index) = fillers::without_fillers(transcript);
    tracing::info!(
        fillers = transcript.words.len() - clean.words.len(),
        "filler words to cut"
    );
    let plans = plan(input, &clean, loudness_db, scenes_ahead, opts, ctx).await?;
    let total = transcript.words.len();
    Ok(plans
        .into_iter()
        .map(|mut p| {
            p.first_word = index.get(p.first_word).copied().unwrap_or(total);
            p.end_word = match p.end_word {
                0 => 0,
                e => index.get(e - 1).map_or(total, |&i| i + 1),
            };
            p
        })
        .collect())
}

/// The clip plans of `transcript` (without cuts).
async fn plan(
    input: &Path,
    transcript: &Transcript,
    loudness_db: &[f32],
    scenes_ahead: Option<Vec<f64>>,
    opts: &CutOptions,
    ctx: &StageCtx,
) -> Result<Vec<ClipPlan>, StageError> {
    if transcript.words.is_empty() {
        return Err(StageError::NoClips(
            "no speech was recognised in the video, so there is nothing to cut or caption".into(),
        ));
    }
    let found = match scenes_ahead {
        Some(found) => found,
        None => {
            let p = ctx.progress.clone();
            let progress = super::Progress::new(move |pct| p.set(pct as f64 / 100.0 * 0.8));
            let range = (opts.start, opts.duration);
            scenes::detect(input, range, &ctx.cancel, &progress, None).await?
        }
    };
    let scene_changes = found.into_iter().map(|t| t + opts.start).collect();
    // The loudness series starts at `opts.start`; pad it so index i covers
    // source time [i*step, (i+1)*step).
    let pad = (opts.start / LOUDNESS_STEP).round() as usize;
    let mut loudness = vec![-90.0f32; pad];
    loudness.extend_from_slice(loudness_db);
    let signals = Signals {
        loudness_db: loudness,
        loudness_step: LOUDNESS_STEP,
        scene_changes,
    };

    let prompt = opts.prompt.as_deref().and_then(Prompt::parse);
    if let Some(p) = &prompt {
        tracing::info!(terms = ?p.terms(), "steering clip selection by the prompt");
    }
    if opts.skip_cuts {
        let plan = whole_range(transcript, &signals, opts, prompt.as_ref());
        ctx.progress.done();
        return Ok(vec![plan]);
    }
    let mut candidates = score::select_clips_steered(
        transcript,
        &signals,
        opts.range,
        opts.max_clips.max(1),
        prompt.as_ref(),
    );
    if prompt.is_some() {
        let matching = candidates
            .iter()
            .filter(|c| c.scores.prompt_match.is_some_and(|m| m > 0))
            .count();
        tracing::info!(
            clips = candidates.len(),
            matching,
            "clips chosen with the prompt"
        );
    }
    let speech = transcript.words.last().map(|w| w.end).unwrap_or(0.0)
        - transcript.words.first().map(|w| w.start).unwrap_or(0.0);
    if candidates.is_empty() && opts.flexible_range {
        let shorter = (speech / 3.0).clamp(MIN_FLEXIBLE_SECS, opts.range.0);
        if shorter < opts.range.0 {
            candidates = score::select_clips_steered(
                transcript,
                &signals,
                (shorter, opts.range.1),
                opts.max_clips.max(1),
                prompt.as_ref(),
            );
        }
        if candidates.is_empty() && speech <= opts.range.1 {
            tracing::info!(speech, "short video: one clip of all its speech");
            ctx.progress.done();
            return Ok(vec![short_input(
                transcript,
                &signals,
                opts,
                prompt.as_ref(),
            )]);
        }
    }
    if candidates.is_empty() {
        return Err(StageError::NoClips(format!(
            "no clip of {}–{} s fits this video's speech ({} of speech): choose a shorter clip length or skip cuts",
            opts.range.0,
            opts.range.1,
            display_duration(speech)
        )));
    }
    if let Some(cfg) = &opts.rerank {
        let texts: Vec<String> = candidates
            .iter()
            .map(|c| join_words(&transcript.words[c.first_word..c.end_word]))
            .collect();
        match rerank::rerank(candidates.clone(), &texts, opts.prompt.as_deref(), cfg).await {
            Ok(reranked) => candidates = reranked,
            Err(e) => tracing::warn!(error = %e, "re-ranker failed; keeping the local ranking"),
        }
    }
    ctx.progress.done();
    Ok(candidates.into_iter().map(ClipPlan::from).collect())
}

/// A candidate as a plan (no cuts yet).
impl From<score::Candidate> for ClipPlan {
    fn from(c: score::Candidate) -> Self {
        ClipPlan {
            start: c.start,
            end: c.end,
            score: c.score,
            title: c.title,
            first_word: c.first_word,
            end_word: c.end_word,
            reason: c.reason,
            scores: c.scores,
            cuts: Vec::new(),
        }
    }
}

/// The shortest clips the `auto` preset looks for when none of its range
/// fits.
const MIN_FLEXIBLE_SECS: f64 = 5.0;

/// All the speech as one clip, from just before its first word to just
/// after its last (a video too short for any clip, with the `auto` preset).
fn short_input(
    t: &Transcript,
    signals: &Signals,
    opts: &CutOptions,
    prompt: Option<&Prompt>,
) -> ClipPlan {
    let end_of_input = opts.start + opts.duration;
    let start = t
        .words
        .first()
        .map_or(opts.start, |w| (w.start - 0.3).max(opts.start));
    let end = t
        .words
        .last()
        .map_or(end_of_input, |w| (w.end + 0.5).min(end_of_input));
    ClipPlan {
        start,
        end,
        ..whole_range(t, signals, opts, prompt)
    }
}

/// The whole processed range as one clip (skip cuts).
fn whole_range(
    t: &Transcript,
    signals: &Signals,
    opts: &CutOptions,
    prompt: Option<&Prompt>,
) -> ClipPlan {
    let start = opts.start;
    let end = opts.start + opts.duration;
    let scored = score::score_span(t, signals, 0, t.sentences.len(), start, end, prompt);
    ClipPlan {
        start,
        end,
        score: scored.score,
        title: scored.title,
        first_word: 0,
        end_word: t.words.len(),
        reason: scored.reason,
        scores: scored.scores,
        cuts: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stage::Progress;
    use crate::transcript::{sentences_from_words, Word};

    /// Scene changes found ahead (`ahead.rs`) are used as they are: the
    /// source is not searched again (here there is none, so a search fails).
    #[tokio::test]
    async fn scene_changes_found_ahead_are_used() {
        let words: Vec<Word> = "Short clips win attention because captions keep people watching"
            .split_whitespace()
            .enumerate()
            .map(|(i, w)| Word {
                text: w.into(),
                start: 1.0 + i as f64 * 2.0,
                end: 2.5 + i as f64 * 2.0,
                probability: 1.0,
            })
            .collect();
        let t = Transcript {
            language: "en".into(),
            language_probability: None,
            duration: 20.0,
            sentences: sentences_from_words(&words),
            words,
        };
        let opts = CutOptions {
            range: (15.0, 30.0),
            max_clips: 1,
            skip_cuts: true,
            start: 0.0,
            duration: 20.0,
            rerank: None,
            prompt: None,
            remove_fillers: false,
            flexible_range: false,
        };
        let ctx = StageCtx::new(Default::default(), Progress::silent());
        let missing = Path::new("/nonexistent/source.mp4");
        let loudness = vec![-20.0f32; 200];
        let plans = run(missing, &t, &loudness, Some(vec![4.0, 9.0]), &opts, &ctx)
            .await
            .expect("no search needed");
        assert_eq!((plans.len(), plans[0].start, plans[0].end), (1, 0.0, 20.0));
        let searched = run(missing, &t, &loudness, None, &opts, &ctx).await;
        assert!(
            matches!(searched, Err(StageError::Tool { .. })),
            "{searched:?}"
        );
    }
}
