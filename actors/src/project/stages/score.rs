//! The brain of the "cut" stage: enumerate candidate clips made of whole
//! sentences, score them from text and signal features, and pick the best
//! non-overlapping ones.
//!
//! Everything here is pure and deterministic: the same transcript, signals
//! and range always give the same clips in the same order.

use serde::Serialize;

use crate::transcript::{Sentence, Transcript, Word};

/// Signal features measured from the media by other code.
#[derive(Clone, Debug, Default)]
pub struct Signals {
    /// Loudness in dBFS (RMS) per window of `loudness_step` seconds, window i covers [i*step, (i+1)*step).
    pub loudness_db: Vec<f32>,
    pub loudness_step: f64,
    /// Times (seconds) where ffmpeg's scene detection saw a cut.
    pub scene_changes: Vec<f64>,
}

/// Seconds of silence kept before a clip's first word (when the gap allows).
pub const PAD_BEFORE: f64 = 0.15;
/// Seconds of silence kept after a clip's last word (when the gap allows).
pub const PAD_AFTER: f64 = 0.3;
/// The longest title `make_title` returns, in characters.
pub const MAX_TITLE_CHARS: usize = 60;

/// Loudness windows quieter than this are silence and do not count.
const SILENT_DB: f32 = -60.0;

// Weights of the features in the 0–100 score; they add up to 100.
const W_HOOK: f64 = 22.0;
const W_QUESTIONS: f64 = 10.0;
const W_EMPHASIS: f64 = 12.0;
const W_SPEECH_RATE: f64 = 12.0;
const W_LOUDNESS: f64 = 10.0;
const W_SCENES: f64 = 6.0;
const W_COMPLETENESS: f64 = 20.0;
const W_LENGTH: f64 = 8.0;

/// Words that signal emphasis or strong claims (compared lower-case, punctuation stripped).
#[rustfmt::skip]
const EMPHASIS_WORDS: &[&str] = &[
    "absolutely", "actually", "always", "amazing", "best", "biggest", "critical", "crazy",
    "definitely", "easy", "essential", "everyone", "everything", "exactly", "huge", "important",
    "impossible", "incredible", "insane", "key", "literally", "massive", "mistake", "mistakes",
    "must", "never", "nobody", "nothing", "powerful", "problem", "really", "secret", "secrets",
    "shocking", "simple", "stop", "surprising", "terrible", "totally", "truth", "ultimate",
    "worst", "wrong",
];

/// Openers that make a first sentence a hook (matched at its start, after fillers).
#[rustfmt::skip]
const HOOK_OPENERS: &[&str] = &[
    "here's why", "here is why", "here's how", "here is how", "here's what", "here's the thing",
    "the secret", "the truth", "the problem", "the biggest", "the reason", "the real reason",
    "the number one", "the best", "the worst", "the one thing", "stop", "never", "don't",
    "how to", "how do", "why", "what if", "what happens", "imagine", "nobody", "no one",
    "most people", "everyone", "if you", "you need", "you have to", "you should", "this is why",
    "this is how", "did you know", "let me tell you", "i bet", "want to", "listen",
];

/// Leading fillers skipped before matching a hook opener ("So, here's why…").
#[rustfmt::skip]
const FILLERS: &[&str] = &[
    "so", "okay", "ok", "alright", "well", "now", "and", "but", "um", "uh", "look", "yeah",
];

/// Words addressing the viewer.
#[rustfmt::skip]
const SECOND_PERSON: &[&str] = &[
    "you", "your", "you're", "you'll", "you've", "yourself", "yours",
];

/// Spelled-out numbers that make a hook concrete ("three mistakes").
#[rustfmt::skip]
const NUMBER_WORDS: &[&str] = &[
    "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
    "fifteen", "twenty", "thirty", "fifty", "hundred", "thousand", "million", "billion",
];

/// Words that make a clip start in the middle of a thought.
#[rustfmt::skip]
const CONNECTIVES: &[&str] = &[
    "and", "but", "so", "because", "cause", "or", "also", "then", "plus", "which", "anyway",
    "however", "although", "though", "nor", "therefore", "otherwise", "besides", "whereas",
];

/// Words a truncated title should not end on.
#[rustfmt::skip]
const DANGLING: &[&str] = &[
    "a", "an", "the", "and", "or", "but", "so", "of", "to", "in", "on", "at", "for", "with",
    "from", "by", "as", "that", "which", "is", "are", "was", "my", "your", "our", "their", "its",
];

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

/// The normalised (0..=1) features behind a clip's score.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScoreBreakdown {
    /// Hook strength of the first sentence.
    pub hook: f64,
    /// Density of questions and exclamations.
    pub questions: f64,
    /// Density of emphasis words.
    pub emphasis: f64,
    /// Liveliness of the speech rate (2.3–3.5 words per second is best).
    pub speech_rate: f64,
    /// Loudness variation over the clip (0.5 when no loudness was measured).
    pub loudness: f64,
    /// Scene changes per minute, capped.
    pub scenes: f64,
    /// Ends on terminal punctuation and does not start with a connective.
    pub completeness: f64,
}

impl ScoreBreakdown {
    /// Every feature rounded to 3 decimals, for stable, readable output.
    fn rounded(self) -> Self {
        let r = |x: f64| (x * 1000.0).round() / 1000.0;
        Self {
            hook: r(self.hook),
            questions: r(self.questions),
            emphasis: r(self.emphasis),
            speech_rate: r(self.speech_rate),
            loudness: r(self.loudness),
            scenes: r(self.scenes),
            completeness: r(self.completeness),
        }
    }

    /// The weighted 0–100 score, with `length` the 0..=1 preference for the clip's length.
    fn weighted(&self, length: f64) -> f64 {
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
///
/// Candidates are runs of whole sentences whose padded length lies inside
/// `range` (min, max seconds). Selection is greedy best-first; two clips
/// overlap when their padded `[start, end)` intervals intersect.
pub fn select_clips(
    t: &Transcript,
    signals: &Signals,
    range: (f64, f64),
    max_clips: usize,
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
        .map(|s| SentenceFeatures::new(s, &t.words))
        .collect();
    let ctx = ScoringContext::new(signals, Some((min_len, max_len)));

    let mut scored = Vec::new();
    for first in 0..t.sentences.len() {
        let mut run = RunStats::default();
        for (last, f) in features.iter().enumerate().skip(first) {
            let Some(f) = f else { break };
            if last > first && f.first_word < run.end_word {
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
            });
        }
    }

    scored.sort_by(|a, b| {
        b.score
            .cmp(&a.score)
            .then(a.start.total_cmp(&b.start))
            .then((a.end - a.start).total_cmp(&(b.end - b.start)))
            .then(a.first_word.cmp(&b.first_word))
    });

    let mut taken: Vec<Scored> = Vec::new();
    for candidate in scored {
        if taken.len() == max_clips {
            break;
        }
        if taken
            .iter()
            .all(|c| candidate.end <= c.start || c.end <= candidate.start)
        {
            taken.push(candidate);
        }
    }

    taken
        .into_iter()
        .map(|c| {
            let texts: Vec<&str> = t.sentences[c.first_sentence..c.end_sentence]
                .iter()
                .take(2)
                .map(|s| s.text.as_str())
                .collect();
            Candidate {
                start: c.start,
                end: c.end,
                first_word: c.first_word,
                end_word: c.end_word,
                score: c.score,
                title: make_title(&texts),
                breakdown: c.breakdown,
            }
        })
        .collect()
}

/// Scores an explicit span: sentences `first_sentence..end_sentence` of `t`,
/// cut exactly at `start..end` (no padding, no length check), e.g. the whole
/// processed range when cuts are skipped. Uses the same features as
/// [`select_clips`] without the length preference. Sentences whose word
/// ranges do not fit `t` are left out; a span with no usable sentence scores
/// 0 with an empty title and an empty word range.
pub fn score_span(
    t: &Transcript,
    signals: &Signals,
    first_sentence: usize,
    end_sentence: usize,
    start: f64,
    end: f64,
) -> Candidate {
    let sentences = t
        .sentences
        .get(first_sentence..end_sentence.min(t.sentences.len()))
        .unwrap_or_default();
    let mut run = RunStats::default();
    let mut texts = Vec::new();
    for s in sentences {
        if let Some(f) = SentenceFeatures::new(s, &t.words) {
            run.add(&f);
            if texts.len() < 2 {
                texts.push(s.text.as_str());
            }
        }
    }
    let (score, breakdown) = if run.sentences == 0 {
        (0, ScoreBreakdown::default())
    } else {
        ScoringContext::new(signals, None).score(&run, start, end)
    };
    Candidate {
        start,
        end,
        first_word: run.first_word,
        end_word: run.end_word.max(run.first_word),
        score,
        title: make_title(&texts),
        breakdown,
    }
}

/// A short title (≤ 60 chars, cut at a word boundary, no trailing punctuation other than '?' or '!', first letter capitalised) drawn from the clip's text — prefer the strongest "hook" sentence among the first two sentences.
pub fn make_title(sentence_texts: &[&str]) -> String {
    let mut choices: Vec<&str> = sentence_texts.iter().take(2).copied().collect();
    // Strongest hook first; the earlier sentence wins a tie (the sort is stable).
    choices.sort_by(|a, b| hook_strength(b).total_cmp(&hook_strength(a)));
    choices
        .into_iter()
        .map(title_from_sentence)
        .find(|title| !title.is_empty())
        .unwrap_or_default()
}

fn title_from_sentence(sentence: &str) -> String {
    let mut words: Vec<&str> = sentence.split_whitespace().collect();
    // Drop leading fillers and connectives ("So, here's why…" → "Here's why…"),
    // but never the whole sentence.
    let skip = words
        .iter()
        .take_while(|w| {
            let n = normalize(w);
            FILLERS.contains(&n.as_str()) || CONNECTIVES.contains(&n.as_str())
        })
        .count();
    if skip < words.len() {
        words.drain(..skip);
    }

    let mut title = String::new();
    let mut truncated = false;
    for (i, word) in words.iter().enumerate() {
        let word = if i == 0 {
            capitalize(word)
        } else {
            (*word).to_string()
        };
        let extra = word.chars().count() + usize::from(!title.is_empty());
        if title.chars().count() + extra > MAX_TITLE_CHARS {
            if title.is_empty() {
                // A single word longer than a title: nothing better than cutting it.
                title = word.chars().take(MAX_TITLE_CHARS).collect();
            }
            truncated = true;
            break;
        }
        if !title.is_empty() {
            title.push(' ');
        }
        title.push_str(&word);
    }

    if truncated {
        // Don't end a cut title on "the", "and", "of"…
        while let Some((head, last)) = title.rsplit_once(' ') {
            if !DANGLING.contains(&normalize(last).as_str()) {
                break;
            }
            title.truncate(head.len());
        }
    }
    while title.ends_with(|c: char| !c.is_alphanumeric() && c != '?' && c != '!') {
        title.pop();
    }
    title
}

fn capitalize(word: &str) -> String {
    let Some(pos) = word.find(char::is_alphanumeric) else {
        return word.to_string();
    };
    let (head, rest) = word.split_at(pos);
    let mut chars = rest.chars();
    let first = chars
        .next()
        .map(|c| c.to_uppercase().collect::<String>())
        .unwrap_or_default();
    format!("{head}{first}{}", chars.as_str())
}

/// Lower-case, curly apostrophes straightened, surrounding punctuation removed.
fn normalize(token: &str) -> String {
    token
        .replace('’', "'")
        .trim_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase()
}

fn tokens(text: &str) -> Vec<String> {
    text.split_whitespace()
        .map(normalize)
        .filter(|t| !t.is_empty())
        .collect()
}

fn starts_with_phrase(tokens: &[String], phrase: &str) -> bool {
    let mut words = phrase.split(' ');
    let mut rest = tokens.iter();
    words.all(|w| rest.next().is_some_and(|t| t == w))
}

fn is_question(text: &str) -> bool {
    text.contains(['?', '？'])
}

fn is_exclamation(text: &str) -> bool {
    text.contains(['!', '！'])
}

fn ends_terminal(text: &str) -> bool {
    text.trim_end()
        .trim_end_matches(['"', '\'', ')', ']', '»', '”', '’'])
        .ends_with(['.', '?', '!', '…', '。', '？', '！'])
}

/// How strongly a sentence grabs attention as a clip's opening, 0..=1.
fn hook_strength(text: &str) -> f64 {
    let tokens = tokens(text);
    if tokens.is_empty() {
        return 0.0;
    }
    let fillers = tokens
        .iter()
        .take_while(|t| FILLERS.contains(&t.as_str()))
        .count();
    let opening = &tokens[fillers.min(tokens.len() - 1)..];

    let mut score = 0.0;
    if is_question(text) {
        score += 0.30;
    }
    if HOOK_OPENERS.iter().any(|p| starts_with_phrase(opening, p)) {
        score += 0.35;
    }
    if tokens.iter().any(|t| SECOND_PERSON.contains(&t.as_str())) {
        score += 0.15;
    }
    if tokens
        .iter()
        .any(|t| t.chars().any(|c| c.is_ascii_digit()) || NUMBER_WORDS.contains(&t.as_str()))
    {
        score += 0.15;
    }
    if is_exclamation(text) {
        score += 0.10;
    }
    score += match tokens.len() {
        0..=8 => 0.15,
        9..=14 => 0.08,
        _ => 0.0,
    };
    f64::min(score, 1.0)
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
}

impl SentenceFeatures {
    /// `None` when the sentence's word range or times are unusable.
    fn new(s: &Sentence, words: &[Word]) -> Option<Self> {
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
            connective_start: tokens
                .first()
                .is_some_and(|t| CONNECTIVES.contains(&t.as_str())),
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
}

struct ScoringContext {
    loudness: LoudnessIndex,
    scenes: SceneIndex,
    /// The (min, max) length range, for the length preference; `None` when
    /// the span was given (no preference).
    range: Option<(f64, f64)>,
}

impl ScoringContext {
    fn new(signals: &Signals, range: Option<(f64, f64)>) -> Self {
        Self {
            loudness: LoudnessIndex::new(signals),
            scenes: SceneIndex::new(&signals.scene_changes),
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

/// Prefix sums over the voiced loudness windows, for O(1) std-dev of any span.
struct LoudnessIndex {
    step: f64,
    count: Vec<u32>,
    sum: Vec<f64>,
    sum_sq: Vec<f64>,
}

impl LoudnessIndex {
    fn new(signals: &Signals) -> Self {
        let step = signals.loudness_step;
        let n = signals.loudness_db.len();
        let mut index = Self {
            step,
            count: Vec::with_capacity(n + 1),
            sum: Vec::with_capacity(n + 1),
            sum_sq: Vec::with_capacity(n + 1),
        };
        let (mut count, mut sum, mut sum_sq) = (0u32, 0.0f64, 0.0f64);
        index.count.push(count);
        index.sum.push(sum);
        index.sum_sq.push(sum_sq);
        for &db in &signals.loudness_db {
            if db.is_finite() && db >= SILENT_DB {
                // Shifted to be non-negative and small, which keeps the sums precise.
                let v = f64::from(db - SILENT_DB);
                count += 1;
                sum += v;
                sum_sq += v * v;
            }
            index.count.push(count);
            index.sum.push(sum);
            index.sum_sq.push(sum_sq);
        }
        index
    }

    /// Std-dev (dB) of the voiced windows overlapping `[start, end)`, or
    /// `None` when there is too little data to say.
    fn variation(&self, start: f64, end: f64) -> Option<f64> {
        let windows = self.count.len() - 1;
        if !(self.step.is_finite() && self.step > 0.0) || windows == 0 {
            return None;
        }
        let lo = (start / self.step).floor().max(0.0) as usize;
        let hi = ((end / self.step).ceil().max(0.0) as usize).min(windows);
        if lo >= hi {
            return None;
        }
        let n = self.count[hi] - self.count[lo];
        if n < 3 {
            return None;
        }
        let n = f64::from(n);
        let mean = (self.sum[hi] - self.sum[lo]) / n;
        let var = (self.sum_sq[hi] - self.sum_sq[lo]) / n - mean * mean;
        Some(var.max(0.0).sqrt())
    }
}

/// Sorted scene-change times.
struct SceneIndex {
    times: Vec<f64>,
}

impl SceneIndex {
    fn new(times: &[f64]) -> Self {
        let mut times: Vec<f64> = times.iter().copied().filter(|t| t.is_finite()).collect();
        times.sort_by(f64::total_cmp);
        times.dedup();
        Self { times }
    }

    /// Scene changes strictly inside `(start, end)`, per minute.
    fn per_minute(&self, start: f64, end: f64) -> f64 {
        let len = end - start;
        if !len.is_finite() || len <= 0.0 {
            return 0.0;
        }
        let hi = self.times.partition_point(|&x| x < end);
        let lo = self.times.partition_point(|&x| x <= start);
        hi.saturating_sub(lo) as f64 * 60.0 / len
    }
}

#[cfg(test)]
#[path = "score_tests.rs"]
mod tests;
