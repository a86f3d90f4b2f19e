//! The brain of the "cut" stage: enumerate candidate clips made of whole
//! sentences that do not cross a topic boundary (`boundaries.rs`), score
//! them from text and signal features (biased by the project's prompt,
//! `steer.rs`), and pick the best ones that neither overlap nor repeat each
//! other, each with a headline (`titles.rs`), sub-scores and a reason
//! (`reasons.rs`).
//!
//! Everything here is pure and deterministic: the same transcript, signals,
//! range and prompt always give the same clips in the same order.

use std::collections::HashSet;

use serde::Serialize;

use super::boundaries;
pub use super::breakdown::ScoreBreakdown;
use super::lexicon::{
    ends_terminal, hook_strength, is_exclamation, is_question, shingles, tokens, CONNECTIVES,
    EMPHASIS_WORDS,
};
use super::reasons::{reason, ClipScores};
pub use super::signals::Signals;
use super::signals::{LoudnessIndex, SceneIndex};
use super::steer::{topic_tier, Hits, Prompt, PROMPT_WEIGHT};
pub use super::titles::{make_title, make_title_words, MAX_TITLE_CHARS};
use crate::transcript::{Sentence, Transcript, Word};

/// Seconds of silence kept before a clip's first word (when the gap allows).
pub const PAD_BEFORE: f64 = 0.15;
/// Seconds of silence kept after a clip's last word (when the gap allows).
pub const PAD_AFTER: f64 = 0.3;

/// Two clips are near-duplicates when this share of the shorter one's
/// 3-word shingles is also in the other; the lower-scored one is dropped.
pub const NEAR_DUPLICATE_SHARE: f64 = 0.5;
/// Words per shingle for near-duplicate detection.
const SHINGLE_WORDS: usize = 3;

// Weights of the features in the 0–100 score; they add up to 100.
const W_HOOK: f64 = 22.0;
const W_QUESTIONS: f64 = 10.0;
const W_EMPHASIS: f64 = 12.0;
const W_SPEECH_RATE: f64 = 12.0;
const W_LOUDNESS: f64 = 10.0;
const W_SCENES: f64 = 6.0;
const W_COMPLETENESS: f64 = 20.0;
const W_LENGTH: f64 = 8.0;

/// (min, max) seconds for a clipDurationPreset: "auto" → (20, 60), "15-30", "30-60", "60-90"; anything else → None.
pub fn preset_range(name: &str) -> Option<(f64, f64)> {
    match name {
        "auto" => Some((20.0, 60.0)),
        "15-30" => Some((15.0, 30.0)),
        "30-60" => Some((30.0, 60.0)),
        "60-90" => Some((60.0, 90.0)),
        _ => None,
    }
}

impl ScoreBreakdown {
    /// The weighted 0–100 score, with `length` the 0..=1 preference for the
    /// clip's length; with a prompt, blended with the match (`steer.rs`).
    fn weighted(&self, length: f64) -> f64 {
        let own = self.own(length);
        match self.prompt {
            Some(m) => (1.0 - PROMPT_WEIGHT) * own + PROMPT_WEIGHT * 100.0 * m,
            None => own,
        }
    }

    fn own(&self, length: f64) -> f64 {
        W_HOOK * self.hook
            + W_QUESTIONS * self.questions
            + W_EMPHASIS * self.emphasis
            + W_SPEECH_RATE * self.speech_rate
            + W_LOUDNESS * self.loudness
            + W_SCENES * self.scenes
            + W_COMPLETENESS * self.completeness
            + W_LENGTH * length
    }
}

/// A chosen clip: whole sentences `first_word..end_word` of the transcript,
/// cut at `start..end` seconds (padded into the surrounding silence).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Candidate {
    pub start: f64,
    pub end: f64,
    /// Index of the first word in `Transcript::words`.
    pub first_word: usize,
    /// Index one past the last word in `Transcript::words`.
    pub end_word: usize,
    /// 0..=100.
    pub score: u8,
    pub title: String,
    pub breakdown: ScoreBreakdown,
    /// The breakdown as 0–100 sub-scores.
    pub scores: ClipScores,
    /// One sentence: why this clip was picked.
    pub reason: String,
}

impl Candidate {
    /// Length of the clip in seconds.
    pub fn duration(&self) -> f64 {
        self.end - self.start
    }

    /// The clip's display text (empty if the word range does not fit `t`).
    pub fn text(&self, t: &Transcript) -> String {
        t.words
            .get(self.first_word..self.end_word)
            .map(crate::transcript::join_words)
            .unwrap_or_default()
    }
}

/// Non-overlapping clips, best score first (ties: earlier start first), at most `max_clips`.
/// [`select_clips_steered`] without a prompt.
pub fn select_clips(
    t: &Transcript,
    signals: &Signals,
    range: (f64, f64),
    max_clips: usize,
) -> Vec<Candidate> {
    select_clips_steered(t, signals, range, max_clips, None)
}

/// Non-overlapping, non-repeating clips, best score first (ties: earlier
/// start first), at most `max_clips`; with a prompt, the clips that hold a
/// passage about it whole come first (`steer.rs`).
///
/// Candidates are runs of whole sentences whose padded length lies inside
/// `range` (min, max seconds) and that do not run across a topic boundary
/// (when that leaves no candidate at all, boundaries are ignored rather
/// than making no clip). Selection is greedy in that order; two clips
/// overlap when their padded `[start, end)` intervals intersect, and a clip
/// that repeats a better one ([`NEAR_DUPLICATE_SHARE`]) is dropped.
pub fn select_clips_steered(
    t: &Transcript,
    signals: &Signals,
    range: (f64, f64),
    max_clips: usize,
    prompt: Option<&Prompt>,
) -> Vec<Candidate> {
    let (min_len, max_len) = range;
    let range_ok =
        min_len.is_finite() && max_len.is_finite() && max_len > 0.0 && min_len <= max_len;
    if t.sentences.is_empty() || max_clips == 0 || !range_ok {
        return Vec::new();
    }

    let features: Vec<Option<SentenceFeatures>> = t
        .sentences
        .iter()
        .map(|s| SentenceFeatures::new(s, &t.words, prompt))
        .collect();
    let ctx = ScoringContext::new(signals, Some((min_len, max_len)), prompt);
    let found = boundaries::find(t, &signals.scene_changes);
    let mut scored = enumerate(t, &features, &ctx, &boundaries::word_set(&found));
    if scored.is_empty() && !found.is_empty() {
        tracing::info!(
            boundaries = found.len(),
            "no clip fits between the topic boundaries; ignoring them"
        );
        scored = enumerate(t, &features, &ctx, &HashSet::new());
    }
    // A sentence end the next word follows within a breath is inside
    // continuous speech (a quick reply in crosstalk, a run-on): no quiet
    // point to cut at. Such ends are kept only when no clip ends at a pause
    // inside the speech (every clip ending with the speech is not a choice).
    if scored
        .iter()
        .any(|c| c.end_word < t.words.len() && super::quiet::ends_at_pause(t, c.end_word))
    {
        scored.retain(|c| super::quiet::ends_at_pause(t, c.end_word));
    }
    // Likewise a sentence start right after another voice or a run-on has
    // no quiet point before it. Clips whose both cuts are at a pause (the
    // start and end of the speech count) are taken first; the others still
    // fill the places no clean clip overlaps.
    let clean = |c: &Scored| {
        u8::from(super::quiet::starts_at_pause(t, c.first_word))
            + u8::from(super::quiet::ends_at_pause(t, c.end_word))
    };

    // With a prompt, the clips that hold a passage about it come first.
    let passages = prompt.map_or_else(Vec::new, |p| {
        let hits: Vec<Hits> = features
            .iter()
            .map(|f| f.as_ref().map(|f| f.hits).unwrap_or_default())
            .collect();
        p.passages(&hits)
    });
    let tier = |c: &Scored| topic_tier(&passages, c.first_sentence, c.end_sentence);
    scored.sort_by(|a, b| {
        tier(b)
            .cmp(&tier(a))
            .then(clean(b).cmp(&clean(a)))
            .then(b.score.cmp(&a.score))
            .then(a.start.total_cmp(&b.start))
            .then((a.end - a.start).total_cmp(&(b.end - b.start)))
            .then(a.first_word.cmp(&b.first_word))
    });

    let mut taken: Vec<(Scored, HashSet<u64>)> = Vec::new();
    for candidate in scored {
        if taken.len() == max_clips {
            break;
        }
        if !taken
            .iter()
            .all(|(c, _)| candidate.end <= c.start || c.end <= candidate.start)
        {
            continue;
        }
        let text =
            crate::transcript::join_words(&t.words[candidate.first_word..candidate.end_word]);
        let own = shingles(&text, SHINGLE_WORDS);
        if taken.iter().any(|(_, other)| near_duplicate(&own, other)) {
            continue;
        }
        taken.push((candidate, own));
    }

    taken
        .into_iter()
        .map(|(c, _)| {
            let sentences = sentence_words(t, &t.sentences[c.first_sentence..c.end_sentence]);
            let scores = ClipScores::from_breakdown(&c.breakdown);
            let matched = prompt.map(|p| p.matched_words(&c.hits)).unwrap_or_default();
            Candidate {
                start: c.start,
                end: c.end,
                first_word: c.first_word,
                end_word: c.end_word,
                score: c.score,
                title: make_title_words(&t.language, &sentences),
                reason: reason(&scores, &matched),
                scores,
                breakdown: c.breakdown,
            }
        })
        .collect()
}

/// Every run of sentences that fits the range without crossing a boundary
/// (the first word of a sentence in `boundaries`), scored.
fn enumerate(
    t: &Transcript,
    features: &[Option<SentenceFeatures>],
    ctx: &ScoringContext,
    boundaries: &HashSet<usize>,
) -> Vec<Scored> {
    let Some((min_len, max_len)) = ctx.range else {
        return Vec::new();
    };
    let mut scored = Vec::new();
    for first in 0..t.sentences.len() {
        let mut run = RunStats::default();
        for (last, f) in features.iter().enumerate().skip(first) {
            let Some(f) = f else { break };
            if last > first && (f.first_word < run.end_word || boundaries.contains(&f.first_word)) {
                break;
            }
            run.add(f);
            // Padding only grows a clip, so once the speech alone is too long
            // every longer run is too.
            if run.speech.1 - run.speech.0 > max_len {
                break;
            }
            let (start, end) = padded_bounds(t, run.first_word, run.end_word);
            let len = end - start;
            if len < min_len || len > max_len {
                continue;
            }
            let (score, breakdown) = ctx.score(&run, start, end);
            scored.push(Scored {
                start,
                end,
                first_word: run.first_word,
                end_word: run.end_word,
                first_sentence: first,
                end_sentence: last + 1,
                score,
                breakdown,
                hits: run.hits,
            });
        }
    }
    scored
}

/// Whether two clips' shingle sets say the same thing.
fn near_duplicate(a: &HashSet<u64>, b: &HashSet<u64>) -> bool {
    let smaller = a.len().min(b.len());
    smaller > 0 && a.intersection(b).count() as f64 / smaller as f64 >= NEAR_DUPLICATE_SHARE
}

/// Scores an explicit span: sentences `first_sentence..end_sentence` of `t`,
/// cut exactly at `start..end` (no padding, no length check), e.g. the whole
/// processed range when cuts are skipped. Uses the same features as
/// [`select_clips_steered`] without the length preference. Sentences whose word
/// ranges do not fit `t` are left out; a span with no usable sentence scores
/// 0 with an empty title and an empty word range.
pub fn score_span(
    t: &Transcript,
    signals: &Signals,
    first_sentence: usize,
    end_sentence: usize,
    start: f64,
    end: f64,
    prompt: Option<&Prompt>,
) -> Candidate {
    let sentences = t
        .sentences
        .get(first_sentence..end_sentence.min(t.sentences.len()))
        .unwrap_or_default();
    let mut run = RunStats::default();
    let mut used = Vec::new();
    for s in sentences {
        if let Some(f) = SentenceFeatures::new(s, &t.words, prompt) {
            run.add(&f);
            used.push(s);
        }
    }
    let title_words = sentence_words(t, used);
    let (score, breakdown) = if run.sentences == 0 {
        (0, ScoreBreakdown::default())
    } else {
        ScoringContext::new(signals, None, prompt).score(&run, start, end)
    };
    let scores = ClipScores::from_breakdown(&breakdown);
    let matched = prompt
        .map(|p| p.matched_words(&run.hits))
        .unwrap_or_default();
    Candidate {
        start,
        end,
        first_word: run.first_word,
        end_word: run.end_word.max(run.first_word),
        score,
        title: make_title_words(&t.language, &title_words),
        reason: reason(&scores, &matched),
        scores,
        breakdown,
    }
}

/// The words of each sentence, for its clip's title (`titles.rs`).
fn sentence_words<'a>(
    t: &'a Transcript,
    sentences: impl IntoIterator<Item = &'a Sentence>,
) -> Vec<Vec<&'a str>> {
    sentences
        .into_iter()
        .map(|s| {
            t.words
                .get(s.first_word..s.end_word)
                .unwrap_or_default()
                .iter()
                .map(|w| w.text.as_str())
                .collect()
        })
        .collect()
}

/// Text features of one sentence, computed once.
struct SentenceFeatures {
    first_word: usize,
    end_word: usize,
    /// Start of the first word and end of the last, in seconds.
    speech: (f64, f64),
    words: usize,
    emphasis: usize,
    question: bool,
    exclamation: bool,
    terminal: bool,
    hook: f64,
    connective_start: bool,
    /// What it says of the prompt (empty without one).
    hits: Hits,
}

impl SentenceFeatures {
    /// `None` when the sentence's word range or times are unusable.
    fn new(s: &Sentence, words: &[Word], prompt: Option<&Prompt>) -> Option<Self> {
        let slice = words
            .get(s.first_word..s.end_word)
            .filter(|w| !w.is_empty())?;
        let times_ok = slice
            .iter()
            .all(|w| w.start.is_finite() && w.end.is_finite());
        if !times_ok || slice[0].start > slice[slice.len() - 1].end {
            return None;
        }
        let tokens = tokens(&s.text);
        Some(Self {
            first_word: s.first_word,
            end_word: s.end_word,
            speech: (slice[0].start, slice[slice.len() - 1].end),
            words: slice.len(),
            emphasis: tokens
                .iter()
                .filter(|t| EMPHASIS_WORDS.contains(&t.as_str()))
                .count(),
            question: is_question(&s.text),
            exclamation: is_exclamation(&s.text),
            terminal: ends_terminal(&s.text),
            hook: hook_strength(&s.text),
            // The talk's first sentence leans on nothing before it ("So
            // let's talk about Anaconda." opens the talk show of the corpus).
            connective_start: s.first_word > 0
                && tokens
                    .first()
                    .is_some_and(|t| CONNECTIVES.contains(&t.as_str())),
            hits: prompt.map(|p| p.hits(&s.text)).unwrap_or_default(),
        })
    }
}

/// Running totals over the sentences of a run, plus what its first and last
/// sentences say about how it opens and ends.
#[derive(Default)]
struct RunStats {
    sentences: usize,
    words: usize,
    emphasis: usize,
    questions: usize,
    exclamations: usize,
    hook: f64,
    connective_start: bool,
    terminal: bool,
    first_word: usize,
    end_word: usize,
    speech: (f64, f64),
    hits: Hits,
}

impl RunStats {
    fn add(&mut self, f: &SentenceFeatures) {
        if self.sentences == 0 {
            self.hook = f.hook;
            self.connective_start = f.connective_start;
            self.first_word = f.first_word;
            self.speech.0 = f.speech.0;
        }
        self.terminal = f.terminal;
        self.end_word = f.end_word;
        self.speech.1 = f.speech.1;
        self.sentences += 1;
        self.words += f.words;
        self.emphasis += f.emphasis;
        self.questions += usize::from(f.question);
        self.exclamations += usize::from(f.exclamation && !f.question);
        self.hits.add(&f.hits);
    }
}

/// A scored candidate before selection (titles are made only for winners).
struct Scored {
    start: f64,
    end: f64,
    first_word: usize,
    end_word: usize,
    first_sentence: usize,
    end_sentence: usize,
    score: u8,
    breakdown: ScoreBreakdown,
    hits: Hits,
}

struct ScoringContext<'p> {
    loudness: LoudnessIndex,
    scenes: SceneIndex,
    prompt: Option<&'p Prompt>,
    /// The (min, max) length range, for the length preference; `None` when
    /// the span was given (no preference).
    range: Option<(f64, f64)>,
}

impl<'p> ScoringContext<'p> {
    fn new(signals: &Signals, range: Option<(f64, f64)>, prompt: Option<&'p Prompt>) -> Self {
        Self {
            loudness: LoudnessIndex::new(signals),
            scenes: SceneIndex::new(&signals.scene_changes),
            prompt,
            range,
        }
    }

    /// Scores a run of at least one sentence cut at `start..end`.
    fn score(&self, run: &RunStats, start: f64, end: f64) -> (u8, ScoreBreakdown) {
        let spoken = (run.speech.1 - run.speech.0).max(0.1);
        let words = run.words.max(1) as f64;
        let sentences = run.sentences.max(1) as f64;
        let expressive = run.questions as f64 + 0.5 * run.exclamations as f64;

        let breakdown = ScoreBreakdown {
            hook: run.hook,
            questions: (expressive / sentences / 0.4).min(1.0),
            emphasis: (run.emphasis as f64 / words / 0.04).min(1.0),
            speech_rate: speech_rate_score(run.words as f64 / spoken),
            loudness: self
                .loudness
                .variation(start, end)
                .map_or(0.5, loudness_score),
            scenes: (self.scenes.per_minute(start, end) / 4.0).min(1.0),
            completeness: 0.5 * f64::from(u8::from(run.terminal))
                + 0.5 * f64::from(u8::from(!run.connective_start)),
            prompt: self.prompt.map(|p| p.score(&run.hits)),
        }
        .rounded();
        let length = self
            .range
            .map_or(1.0, |range| length_preference(end - start, range));
        let total = breakdown.weighted(length);
        let score = if total.is_finite() {
            total.clamp(0.0, 100.0).round() as u8
        } else {
            0
        };
        (score, breakdown)
    }
}

/// The clip bounds of words `first_word..end_word`, padded into the silence
/// around them but never into a neighbouring word or past the media's end.
fn padded_bounds(t: &Transcript, first_word: usize, end_word: usize) -> (f64, f64) {
    let first = &t.words[first_word];
    let last = &t.words[end_word - 1];
    let floor = first_word.checked_sub(1).map_or(0.0, |i| t.words[i].end);
    let ceiling = t.words.get(end_word).map_or(t.duration, |w| w.start);
    let start = (first.start - PAD_BEFORE).max(floor).min(first.start);
    let end = (last.end + PAD_AFTER).min(ceiling).max(last.end);
    (start, end)
}

/// Rewards a lively 2.3–3.5 words per second; very slow speech scores 0.
fn speech_rate_score(wps: f64) -> f64 {
    if !wps.is_finite() || wps < 1.2 {
        0.0
    } else if wps < 2.3 {
        (wps - 1.2) / 1.1
    } else if wps <= 3.5 {
        1.0
    } else if wps < 5.0 {
        1.0 - 0.4 * (wps - 3.5) / 1.5
    } else {
        0.6
    }
}

/// Maps the std-dev of loudness (dB) to 0..=1: flat at ≤ 1.5 dB, lively at ≥ 9 dB.
fn loudness_score(std_db: f64) -> f64 {
    ((std_db - 1.5) / 7.5).clamp(0.0, 1.0)
}

/// Mild preference for lengths near the middle of the range, 0..=1.
fn length_preference(len: f64, (min, max): (f64, f64)) -> f64 {
    let half = (max - min) / 2.0;
    if half <= 0.0 {
        return 1.0;
    }
    (1.0 - (len - (min + half)).abs() / half).clamp(0.0, 1.0)
}

#[cfg(test)]
#[path = "score_tests.rs"]
mod tests;
