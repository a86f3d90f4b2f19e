//! Why a clip was picked: its sub-scores (0–100) and one sentence built from
//! them and from the prompt words it matched.
//!
//! The sub-scores are the scoring features grouped the way people talk
//! about clips:
//!
//! - `hook`: how strongly the first sentence grabs attention (question,
//!   "here's why…" opener, addressing the viewer, numbers, brevity);
//! - `completeness`: ends on a full stop/question/exclamation and does not
//!   start with a connective ("and", "because", …), half each;
//! - `emotion`: 40% emphasis words, 35% questions and exclamations, 25%
//!   loudness variation;
//! - `pace`: 75% speech rate (2.3–3.5 words/s is best), 25% scene changes;
//! - `promptMatch` (only with a prompt): the match of `steer.rs`.

use serde::{Deserialize, Serialize};

use super::breakdown::ScoreBreakdown;

/// A sub-score counts as a reason to pick a clip from this value up.
const STRONG: u8 = 60;

/// A clip's sub-scores, each 0..=100.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClipScores {
    pub hook: u8,
    pub completeness: u8,
    pub emotion: u8,
    pub pace: u8,
    /// Only when the project has a prompt.
    pub prompt_match: Option<u8>,
}

fn pct(x: f64) -> u8 {
    if x.is_finite() {
        (x * 100.0).round().clamp(0.0, 100.0) as u8
    } else {
        0
    }
}

impl ClipScores {
    pub fn from_breakdown(b: &ScoreBreakdown) -> Self {
        Self {
            hook: pct(b.hook),
            completeness: pct(b.completeness),
            emotion: pct(0.40 * b.emphasis + 0.35 * b.questions + 0.25 * b.loudness),
            pace: pct(0.75 * b.speech_rate + 0.25 * b.scenes),
            prompt_match: b.prompt.map(pct),
        }
    }
}

/// One sentence saying why a clip with `scores` was picked; `matched` are
/// the prompt's words it says (empty without a prompt or a match).
pub fn reason(scores: &ClipScores, matched: &[String]) -> String {
    let mut parts = Vec::new();
    if let (Some(m), false) = (scores.prompt_match, matched.is_empty()) {
        let words: Vec<String> = matched.iter().take(4).map(|w| format!("“{w}”")).collect();
        parts.push(format!(
            "matches your prompt on {} (match {m})",
            join(&words)
        ));
    }
    let mut strong: Vec<(u8, &str, &str)> = [
        (scores.hook, "opens with a strong hook", "hook"),
        (
            scores.completeness,
            "tells a complete thought",
            "completeness",
        ),
        (scores.emotion, "is emphatic and expressive", "emotion"),
        (scores.pace, "keeps a lively pace", "pace"),
    ]
    .into_iter()
    .filter(|(v, _, _)| *v >= STRONG)
    .collect();
    // Highest first; the listed order breaks ties (the sort is stable).
    strong.sort_by_key(|s| std::cmp::Reverse(s.0));
    for (v, what, name) in strong.iter().take(2) {
        parts.push(format!("{what} ({name} {v})"));
    }
    let mut sentence = if parts.is_empty() {
        let (v, name) = [
            (scores.hook, "hook"),
            (scores.completeness, "completeness"),
            (scores.emotion, "emotion"),
            (scores.pace, "pace"),
        ]
        .into_iter()
        .fold((0, "hook"), |best, x| if x.0 > best.0 { x } else { best });
        format!("The best moment left: no feature stands out, its strongest is {name} ({v})")
    } else {
        let mut s = join(&parts);
        s[..1].make_ascii_uppercase();
        s
    };
    if scores.prompt_match.is_some() && matched.is_empty() {
        sentence.push_str(", though it does not mention your prompt");
    }
    sentence.push('.');
    sentence
}

/// "a", "a and b", "a, b and c".
fn join(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_follow_the_scores() {
        let s = ClipScores {
            hook: 85,
            completeness: 100,
            emotion: 20,
            pace: 70,
            prompt_match: Some(74),
        };
        assert_eq!(
            reason(&s, &["pasta".into(), "sauce".into()]),
            "Matches your prompt on “pasta” and “sauce” (match 74), tells a complete thought (completeness 100) and opens with a strong hook (hook 85)."
        );
        let flat = ClipScores {
            hook: 10,
            completeness: 50,
            emotion: 30,
            pace: 40,
            prompt_match: Some(0),
        };
        assert_eq!(
            reason(&flat, &[]),
            "The best moment left: no feature stands out, its strongest is completeness (50), though it does not mention your prompt."
        );
        let b = ScoreBreakdown {
            hook: 0.5,
            completeness: 1.0,
            speech_rate: 1.0,
            ..ScoreBreakdown::default()
        };
        let s = ClipScores::from_breakdown(&b);
        assert_eq!(
            (s.hook, s.completeness, s.pace, s.prompt_match),
            (50, 100, 75, None)
        );
        assert_eq!(
            reason(&s, &[]),
            "Tells a complete thought (completeness 100) and keeps a lively pace (pace 75)."
        );
    }
}
