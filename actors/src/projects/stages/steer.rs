//! Steering: a project's free-text `prompt` ("the part about pasta sauce")
//! biases clip selection toward moments that talk about it, by keyword and
//! phrase matching (no embeddings).
//!
//! The prompt's content words (stop words dropped, lower-cased, stemmed by
//! [`lexicon::stem`]) are its *terms*; its *phrases* are the runs in double
//! quotes and every pair of consecutive terms ("tomato sauce"). A candidate
//! clip's match, 0..=1, is
//!
//! `0.6 × share of the terms it says + 0.2 × share of the phrases it says + 0.2 × density`
//!
//! where density is the share of its content words that are terms, counted
//! full at one in ten (a prompt without phrases gives their 0.2 to the term
//! share). With a prompt, a clip's score is `(1 − PROMPT_WEIGHT) × its own
//! score + PROMPT_WEIGHT × 100 × match` (see `score.rs`).
//!
//! Re-scoring alone leaves the ranges where they were (a clip that mentions
//! the topic at its edge wins on its own merits), so selection also finds
//! the *passages* about the prompt ([`Prompt::passages`]) and takes first
//! the clips that hold a passage whole, then clips inside a passage too
//! long for one clip, then the rest (`score.rs`).

use super::lexicon::{self, content_stems};

/// The longest prompt accepted, in characters.
pub const MAX_PROMPT_CHARS: usize = 500;
/// Share of the prompt match in a clip's score when a prompt is given.
pub const PROMPT_WEIGHT: f64 = 0.4;
/// Terms and phrases beyond this many are ignored (they fit a bit mask).
const MAX_TERMS: usize = 64;
/// Density counts full when this share of a clip's content words are terms.
const FULL_DENSITY: f64 = 0.1;
/// A run of sentences saying prompt terms is a passage about the prompt
/// when its match is at least this share of the best run's.
const PASSAGE_SHARE: f64 = 0.5;

/// A parsed prompt.
#[derive(Clone, Debug, PartialEq)]
pub struct Prompt {
    /// The prompt as given (trimmed).
    pub text: String,
    /// Stems of the content words, unique, in prompt order.
    terms: Vec<String>,
    /// How each term was written in the prompt, for reasons.
    shown: Vec<String>,
    /// Sequences of term stems that should appear together.
    phrases: Vec<Vec<String>>,
}

/// What one sentence (or a run of them) says of a prompt.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Hits {
    /// Bit i: term i was said.
    terms: u64,
    /// Bit i: phrase i was said.
    phrases: u64,
    /// Content words that are terms.
    hits: usize,
    /// Content words.
    words: usize,
}

impl Hits {
    /// Adds a following sentence's hits.
    pub fn add(&mut self, other: &Hits) {
        self.terms |= other.terms;
        self.phrases |= other.phrases;
        self.hits += other.hits;
        self.words += other.words;
    }
}

impl Prompt {
    /// `None` when the text has no content word to match.
    pub fn parse(text: &str) -> Option<Prompt> {
        let text = text.trim();
        let mut terms: Vec<String> = Vec::new();
        let mut shown = Vec::new();
        let mut phrases: Vec<Vec<String>> = Vec::new();
        // Odd-numbered pieces between double quotes are quoted phrases.
        for (i, piece) in text.split(['"', '“', '”']).enumerate() {
            let stems = content_stems(piece);
            let words: Vec<String> = lexicon::tokens(piece)
                .into_iter()
                .filter(|t| !lexicon::is_stop_word(t) && t.chars().any(char::is_alphabetic))
                .collect();
            for (stem, word) in stems.iter().zip(&words) {
                if !terms.contains(stem) && terms.len() < MAX_TERMS {
                    terms.push(stem.clone());
                    shown.push(word.clone());
                }
            }
            if i % 2 == 1 && stems.len() >= 2 {
                phrases.push(stems.clone());
            }
            for pair in stems.windows(2) {
                if pair[0] != pair[1] {
                    phrases.push(pair.to_vec());
                }
            }
        }
        phrases.dedup();
        phrases.truncate(MAX_TERMS);
        (!terms.is_empty()).then(|| Prompt {
            text: text.to_string(),
            terms,
            shown,
            phrases,
        })
    }

    /// The terms (as stems), for logs.
    pub fn terms(&self) -> &[String] {
        &self.terms
    }

    /// What `text` says of the prompt.
    pub fn hits(&self, text: &str) -> Hits {
        let stems = content_stems(text);
        let mut hits = Hits {
            words: stems.len(),
            ..Hits::default()
        };
        for stem in &stems {
            if let Some(i) = self.terms.iter().position(|t| t == stem) {
                hits.terms |= 1 << i;
                hits.hits += 1;
            }
        }
        for (i, phrase) in self.phrases.iter().enumerate() {
            if stems.windows(phrase.len()).any(|w| w == phrase.as_slice()) {
                hits.phrases |= 1 << i;
            }
        }
        hits
    }

    /// The match (0..=1) of a clip that says `hits`.
    pub fn score(&self, hits: &Hits) -> f64 {
        let term_share = f64::from(hits.terms.count_ones()) / self.terms.len() as f64;
        let phrase_share = if self.phrases.is_empty() {
            term_share
        } else {
            f64::from(hits.phrases.count_ones()) / self.phrases.len() as f64
        };
        let density = if hits.words == 0 {
            0.0
        } else {
            (hits.hits as f64 / hits.words as f64 / FULL_DENSITY).min(1.0)
        };
        (0.6 * term_share + 0.2 * phrase_share + 0.2 * density).clamp(0.0, 1.0)
    }

    /// The passages about the prompt, as `first..end` sentence ranges,
    /// from what each sentence says of it: runs of sentences that say a
    /// term, one sentence without a term allowed between two that do. A run
    /// is a passage when its match is at least [`PASSAGE_SHARE`] of the best
    /// run's (a prompt word said in passing elsewhere is not one).
    pub fn passages(&self, sentences: &[Hits]) -> Vec<(usize, usize)> {
        let mut runs: Vec<(usize, usize, f64)> = Vec::new();
        let mut i = 0;
        while i < sentences.len() {
            if sentences[i].terms == 0 {
                i += 1;
                continue;
            }
            let mut hits = sentences[i];
            let mut end = i + 1;
            let mut j = end;
            while j < sentences.len() && j <= end + 1 {
                if sentences[j].terms != 0 {
                    for s in &sentences[end..=j] {
                        hits.add(s);
                    }
                    end = j + 1;
                }
                j += 1;
            }
            runs.push((i, end, self.score(&hits)));
            i = end;
        }
        let best = runs.iter().map(|r| r.2).fold(0.0, f64::max);
        runs.into_iter()
            .filter(|r| best > 0.0 && r.2 >= PASSAGE_SHARE * best)
            .map(|r| (r.0, r.1))
            .collect()
    }

    /// The prompt's words a clip that says `hits` mentions, as written in the prompt.
    pub fn matched_words(&self, hits: &Hits) -> Vec<String> {
        self.shown
            .iter()
            .enumerate()
            .filter(|(i, _)| hits.terms & (1 << i) != 0)
            .map(|(_, w)| w.clone())
            .collect()
    }
}

/// Where a clip of sentences `first..end` stands to the `passages` about a
/// prompt, for selection: 2 when it holds one whole, 1 when it lies inside
/// one (a passage too long for one clip), 0 otherwise.
pub fn topic_tier(passages: &[(usize, usize)], first: usize, end: usize) -> u8 {
    passages
        .iter()
        .map(|&(a, b)| {
            if first <= a && b <= end {
                2
            } else if a <= first && end <= b {
                1
            } else {
                0
            }
        })
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_and_phrases_are_stemmed_content_words() {
        let p = Prompt::parse("  Show me the moments about cooking \"tomato sauces\"!  ").unwrap();
        assert_eq!(p.terms(), ["show", "cook", "tomato", "sauc"]);
        assert!(p
            .phrases
            .contains(&vec!["tomato".to_string(), "sauc".to_string()]));
        assert!(Prompt::parse("the of and").is_none());
        assert!(Prompt::parse("").is_none());
    }

    #[test]
    fn matching_text_scores_higher() {
        let p = Prompt::parse("cooking tomato sauce").unwrap();
        let on = p.hits("Then we cooked the tomato sauce slowly, because sauce needs time.");
        let off = p.hits("The ocean tides rise twice a day because of the moon.");
        let half = p.hits("A fresh tomato is sweet in summer.");
        assert!(p.score(&on) > p.score(&half) && p.score(&half) > p.score(&off));
        assert_eq!(p.score(&off), 0.0);
        assert!(p.score(&on) > 0.9, "{}", p.score(&on));
        assert_eq!(p.matched_words(&on), ["cooking", "tomato", "sauce"]);
        // Runs add up.
        let mut run = half;
        run.add(&p.hits("Cook it slowly."));
        assert_eq!(p.matched_words(&run), ["cooking", "tomato"]);
    }

    #[test]
    fn passages_are_runs_about_the_prompt_not_words_said_in_passing() {
        let p = Prompt::parse("cooking fresh pasta with tomato sauce").unwrap();
        let hits: Vec<Hits> = [
            "The ocean tides rise twice a day.",
            "A fresh breeze comes off the sea.",
            "The moon pulls the water.",
            "Waves break on the rocks.",
            "Fresh pasta needs flour and eggs.",
            "Knead the dough until it is smooth.",
            "The tomato sauce starts with garlic.",
            "Cook the pasta while the sauce simmers.",
            "Sailors read the tide tables.",
        ]
        .iter()
        .map(|s| p.hits(s))
        .collect();
        // "fresh" alone at 1 is said in passing; 4..8 is the passage, with
        // the kneading sentence (no term) inside it.
        assert_eq!(p.passages(&hits), [(4, 8)]);
        assert!(
            p.passages(&hits[..3]).len() == 1,
            "the best run is a passage"
        );
        assert!(p.passages(&[]).is_empty());
    }
}
