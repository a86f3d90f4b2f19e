//! Which language a batch is spoken in. Whisper's own detection reads one
//! 30 s window, and one window can mislead it (clear British English read as
//! Welsh with p = 0.95). Here every window of the first batch votes — up to
//! `batch_size` speech windows, all encoded anyway, so the vote costs one
//! decoder step per window — weighted by its seconds of audio; the language
//! the source declares (its metadata) is a prior; and when the vote is close,
//! or the declared language lost, the contenders are told apart by decoding
//! the longest windows in each and comparing the average log-probability of
//! the text (the model writes its own language fluently, another one
//! haltingly).

use anyhow::{anyhow, Result};
use ct2rs::sys::{Device, StorageView, WhisperOptions};

use super::{Detected, WhisperModel, WindowLanguages, WINDOW_FRAMES};
use crate::media::ct2_backend::copy_f32;
use crate::media::whisper_guards::avg_logprob;

/// Weight of the declared language: the share of the vote it gets before
/// the windows' votes (which share the rest).
const PRIOR: f64 = 0.2;
/// The runner-up is checked by decoding when its score is at least this
/// share of the winner's.
const CLOSE: f64 = 0.5;
/// A declared language that lost the vote is still checked by decoding
/// when the windows give it at least this probability.
const HINT_FLOOR: f64 = 0.01;
/// Windows decoded per contender in a check (the longest ones).
const CHECK_WINDOWS: usize = 2;
/// Tokens decoded per window in a check.
const CHECK_TOKENS: usize = 64;

/// Languages ranked by the windows' vote: per language, its probability
/// averaged over the windows weighted by their seconds (`raw`), and its
/// `score` with the declared language's prior. Best score first.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Ranked {
    pub language: String,
    pub raw: f64,
    pub score: f64,
}

pub(crate) fn vote(windows: &[WindowLanguages], secs: &[f64], hint: Option<&str>) -> Vec<Ranked> {
    let total: f64 = secs.iter().take(windows.len()).sum::<f64>().max(1e-9);
    let mut ranked: Vec<Ranked> = Vec::new();
    for (langs, &w) in windows.iter().zip(secs) {
        for (language, p) in langs {
            let share = w / total * f64::from(*p);
            match ranked.iter_mut().find(|r| r.language == *language) {
                Some(r) => r.raw += share,
                None => ranked.push(Ranked {
                    language: language.clone(),
                    raw: share,
                    score: 0.0,
                }),
            }
        }
    }
    if let Some(h) = hint {
        if !ranked.iter().any(|r| r.language == h) {
            ranked.push(Ranked {
                language: h.to_string(),
                raw: 0.0,
                score: 0.0,
            });
        }
    }
    for r in &mut ranked {
        let prior = if Some(r.language.as_str()) == hint {
            PRIOR
        } else {
            0.0
        };
        r.score = (1.0 - PRIOR) * r.raw + prior;
    }
    ranked.sort_by(|a, b| b.score.total_cmp(&a.score));
    ranked
}

/// The languages worth a decoding check beside the vote's winner (empty:
/// the vote decides): the runner-up when close, the declared language when
/// it lost but the audio does not rule it out.
pub(crate) fn contenders(ranked: &[Ranked], hint: Option<&str>) -> Vec<String> {
    let Some(top) = ranked.first() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if let Some(second) = ranked.get(1) {
        if second.score >= CLOSE * top.score {
            out.push(second.language.clone());
        }
    }
    if let Some(h) = hint.filter(|&h| h != top.language) {
        let raw = ranked
            .iter()
            .find(|r| r.language == h)
            .map_or(0.0, |r| r.raw);
        if raw >= HINT_FLOOR && !out.iter().any(|l| l == h) {
            out.push(h.to_string());
        }
    }
    out
}

impl WhisperModel {
    /// Every window's language probabilities from its encoder output.
    pub(super) fn window_languages(&self, encoded: &StorageView) -> Result<Vec<WindowLanguages>> {
        Ok(self
            .model
            .detect_language(encoded)?
            .into_iter()
            .map(|langs| {
                langs
                    .into_iter()
                    .map(|l| (iso_code(&l.language), l.probability))
                    .collect()
            })
            .collect())
    }

    /// The batch's language from its windows' probabilities (`per_window`,
    /// windows of `secs` seconds) and the declared language `hint`.
    pub(super) fn choose_language(
        &self,
        encoded: &StorageView<'_>,
        per_window: &[WindowLanguages],
        secs: &[f64],
        hint: Option<&str>,
    ) -> Result<Detected> {
        let hint = hint.filter(|h| self.knows_language(h));
        let ranked = vote(per_window, secs, hint);
        let top = ranked
            .first()
            .ok_or_else(|| anyhow!("language detection returned nothing"))?;
        let others = contenders(&ranked, hint);
        let mut chosen = top.language.clone();
        if !others.is_empty() {
            let mut best = (self.fluency(encoded, secs, &chosen)?, chosen.clone());
            for language in others {
                let f = self.fluency(encoded, secs, &language)?;
                tracing::debug!(language, fluency = f, against = best.0, "language check");
                if f > best.0 {
                    best = (f, language);
                }
            }
            chosen = best.1;
        }
        let raw = ranked
            .iter()
            .find(|r| r.language == chosen)
            .map_or(0.0, |r| r.raw);
        tracing::debug!(
            language = %chosen,
            probability = raw,
            vote = ?ranked.iter().take(3).map(|r| (&r.language, r.raw)).collect::<Vec<_>>(),
            hint,
            "language chosen"
        );
        Ok(Detected {
            language: chosen,
            probability: raw,
        })
    }

    /// How fluently the model writes the longest windows of `encoded` in
    /// `language`: the mean average log-probability of a greedy decoding
    /// of at most [`CHECK_TOKENS`] tokens of each.
    fn fluency(&self, encoded: &StorageView<'_>, secs: &[f64], language: &str) -> Result<f64> {
        let mut longest: Vec<usize> = (0..secs.len()).collect();
        longest.sort_by(|&a, &b| secs[b].total_cmp(&secs[a]));
        longest.truncate(CHECK_WINDOWS);
        let mut rows = vec![0f32; encoded.size() as usize];
        copy_f32(encoded, &mut rows)?;
        let per_window = rows.len() / secs.len().max(1);
        let mut picked: Vec<f32> = Vec::with_capacity(longest.len() * per_window);
        for &i in &longest {
            picked.extend_from_slice(&rows[i * per_window..(i + 1) * per_window]);
        }
        let frames = WINDOW_FRAMES / 2;
        let shape = [longest.len(), frames, per_window / frames];
        let view = StorageView::new(&shape, &mut picked, Device::CPU)?;
        let (prompt, _) = self.prompt(language, None)?;
        let greedy = WhisperOptions {
            beam_size: 1,
            max_length: prompt.len() + CHECK_TOKENS,
            return_scores: true,
            ..WhisperOptions::default()
        };
        let results = self
            .model
            .generate(&view, &vec![prompt; longest.len()], &greedy)?;
        let logprobs: Vec<f64> = results
            .iter()
            .map(|g| {
                let tokens = g.sequences_ids.first().map_or(0, Vec::len);
                avg_logprob(g.scores.first().copied().unwrap_or(f32::MIN), tokens)
            })
            .collect();
        Ok(logprobs.iter().sum::<f64>() / logprobs.len().max(1) as f64)
    }
}

/// "<|en|>" → "en".
fn iso_code(token: &str) -> String {
    token
        .trim_start_matches("<|")
        .trim_end_matches("|>")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(probs: &[(&str, f32)]) -> WindowLanguages {
        probs.iter().map(|(l, p)| (l.to_string(), *p)).collect()
    }

    #[test]
    fn one_misleading_window_is_outvoted() {
        let windows = [
            window(&[("cy", 0.95), ("en", 0.04)]),
            window(&[("en", 0.9), ("cy", 0.05)]),
            window(&[("en", 0.8), ("cy", 0.1)]),
            window(&[("en", 0.85), ("de", 0.1)]),
        ];
        let ranked = vote(&windows, &[30.0, 30.0, 30.0, 25.0], None);
        assert_eq!(ranked[0].language, "en");
        assert!(ranked[0].raw > 0.6, "{ranked:?}");
        // cy scores 0.23 against en's 0.51: under half, no check needed.
        assert!(contenders(&ranked, None).is_empty(), "{ranked:?}");
    }

    #[test]
    fn longer_windows_weigh_more() {
        let windows = [window(&[("ko", 0.9)]), window(&[("ja", 0.9)])];
        let ranked = vote(&windows, &[28.0, 3.0], None);
        assert_eq!(ranked[0].language, "ko");
    }

    #[test]
    fn a_close_vote_or_a_beaten_declared_language_is_checked() {
        let windows = [window(&[("cy", 0.55), ("en", 0.4)])];
        let ranked = vote(&windows, &[20.0], None);
        assert_eq!(contenders(&ranked, None), ["en"]);
        // Declared English beaten clearly still gets its check when the
        // audio gives it some probability...
        let windows = [window(&[("cy", 0.95), ("en", 0.04)])];
        let ranked = vote(&windows, &[20.0], Some("en"));
        assert_eq!(ranked[0].language, "cy");
        assert_eq!(contenders(&ranked, Some("en")), ["en"]);
        // ... and none when the audio rules it out.
        let windows = [window(&[("ko", 0.999), ("en", 0.001)])];
        let ranked = vote(&windows, &[20.0], Some("en"));
        assert!(contenders(&ranked, Some("en")).is_empty(), "{ranked:?}");
    }

    #[test]
    fn the_prior_decides_between_near_equals() {
        let windows = [window(&[("es", 0.48), ("pt", 0.47)])];
        let ranked = vote(&windows, &[20.0], Some("pt"));
        assert_eq!(ranked[0].language, "pt");
        assert!((ranked[0].raw - 0.47).abs() < 1e-6);
    }
}
