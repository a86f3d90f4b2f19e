//! Words from Whisper's tokens and their cross-attention alignment: token
//! pieces grouped into words, times from the alignment path (as
//! faster-whisper's jump times), punctuation merged into its word, over-long
//! words capped.

use anyhow::Result;
use ct2rs::sys;
use ct2rs::tokenizers::hf::Tokenizer as HfTokenizer;
use ct2rs::Tokenizer as _;

use crate::transcript::Word;

/// Encoder output frames per second (the alignment resolution).
const TOKENS_PER_SECOND: f64 = 50.0;

/// Words of one window's text `tokens`, times relative to the window's start
/// and at most `content_secs`.
pub(super) fn words_from_alignment(
    tokenizer: &HfTokenizer,
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
        .map(|&id| tokenizer.id_to_token(id as u32).unwrap_or_default())
        .collect();
    let groups = split_words(&pieces);
    let mut words: Vec<Word> = Vec::with_capacity(groups.len());
    for range in groups {
        let text = tokenizer.decode(pieces[range.clone()].to_vec())?;
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
