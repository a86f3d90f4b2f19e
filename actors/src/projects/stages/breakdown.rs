//! The normalised features behind a clip's score ([`ScoreBreakdown`]):
//! `score.rs` measures and weighs them, `reasons.rs` explains them.

use serde::Serialize;

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
    /// Match with the project's prompt (`None` without a prompt).
    pub prompt: Option<f64>,
}

impl ScoreBreakdown {
    /// Every feature rounded to 3 decimals, for stable, readable output.
    pub(super) fn rounded(self) -> Self {
        let r = |x: f64| (x * 1000.0).round() / 1000.0;
        Self {
            hook: r(self.hook),
            questions: r(self.questions),
            emphasis: r(self.emphasis),
            speech_rate: r(self.speech_rate),
            loudness: r(self.loudness),
            scenes: r(self.scenes),
            completeness: r(self.completeness),
            prompt: self.prompt.map(r),
        }
    }
}
