//! Words from Whisper's tokens and their cross-attention alignment: token
//! bytes joined into whole characters and grouped into words, times from the
//! alignment path (as faster-whisper's jump times), over-long words at
//! sentence boundaries shortened on the side of the pause (as
//! faster-whisper does), then punctuation merged into its word.

use anyhow::Result;
use ct2rs::sys;
use ct2rs::tokenizers::hf::Tokenizer as HfTokenizer;

use crate::transcript::Word;

/// Encoder output frames per second (the alignment resolution).
const TOKENS_PER_SECOND: f64 = 50.0;

/// Words of one window's text `tokens` in `language`, times relative to the
/// window's start and at most `content_secs`.
pub(super) fn words_from_alignment(
    tokenizer: &HfTokenizer,
    tokens: &[usize],
    alignment: &sys::WhisperAlignmentResult,
    content_secs: f64,
    language: &str,
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

    let pieces: Vec<Vec<u8>> = tokens
        .iter()
        .map(|&id| piece_bytes(&tokenizer.id_to_token(id as u32).unwrap_or_default()))
        .collect();
    let mut words: Vec<Word> = Vec::new();
    for (range, text) in split_words(&pieces, splits_on_spaces(language)) {
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
    // Punctuation is still a word of its own here: at a sentence end the
    // "." takes the pause that follows, not the word before it.
    fit_long_words(&mut words);
    Ok(merge_punctuation(words))
}

/// The bytes a byte-level BPE piece stands for: GPT-2's table maps each
/// byte to a printable character (`Ġ` is the space, byte 0x20); a piece is
/// the run of those characters. A character outside the table (none in
/// Whisper's vocabulary) stands for its own UTF-8 bytes.
pub(super) fn piece_bytes(piece: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(piece.len());
    for c in piece.chars() {
        match byte_of(c) {
            Some(b) => out.push(b),
            None => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
        }
    }
    out
}

/// GPT-2's `bytes_to_unicode`, inverted: the printable bytes (`!`..`~`,
/// `¡`..`¬`, `®`..`ÿ`) stand for themselves, every other byte `b` is the
/// character 256 + (its rank among those others).
fn byte_of(c: char) -> Option<u8> {
    let printable =
        |b: u32| (33..=126).contains(&b) || (161..=172).contains(&b) || (174..=255).contains(&b);
    let code = c as u32;
    if code < 256 {
        return printable(code).then_some(code as u8);
    }
    let rank = code - 256;
    (0u32..256)
        .filter(|&b| !printable(b))
        .nth(rank as usize)
        .map(|b| b as u8)
}

/// Languages written without spaces between words, whose "words" are the
/// smallest token runs that decode to whole characters (as faster-whisper's
/// `split_tokens_on_unicode`).
fn splits_on_spaces(language: &str) -> bool {
    !matches!(language, "zh" | "ja" | "th" | "lo" | "my" | "yue")
}

/// Groups token byte strings into words, each with its token range and its
/// text. Bytes are joined first and decoded as UTF-8 only once a character
/// is complete, so a character whose bytes span tokens is never cut in two
/// (no U+FFFD); bytes that can never form a character (the decoder wrote an
/// invalid sequence) are dropped. With `spaces`, a run that starts with a
/// space begins a new word; without, every complete run of characters is a
/// word.
pub(super) fn split_words(
    pieces: &[Vec<u8>],
    spaces: bool,
) -> Vec<(std::ops::Range<usize>, String)> {
    // Runs of tokens that end on a character boundary.
    let mut units: Vec<(std::ops::Range<usize>, String)> = Vec::new();
    let mut start = 0;
    let mut bytes: Vec<u8> = Vec::new();
    for (i, p) in pieces.iter().enumerate() {
        bytes.extend_from_slice(p);
        let complete = match std::str::from_utf8(&bytes) {
            Ok(_) => true,
            // An incomplete character at the end: wait for the next token.
            Err(e) if e.error_len().is_none() => false,
            // Bytes no later token can complete.
            Err(_) => true,
        };
        if complete || i + 1 == pieces.len() {
            units.push((start..i + 1, valid_text(&bytes)));
            bytes.clear();
            start = i + 1;
        }
    }
    if !spaces {
        return units;
    }
    let mut words: Vec<(std::ops::Range<usize>, String)> = Vec::new();
    for (range, text) in units {
        // As faster-whisper's `split_tokens_on_spaces`: punctuation is a
        // word of its own (merged back once times are fitted).
        let punctuation = {
            let t = text.trim();
            !t.is_empty() && t.chars().all(|c| c.is_ascii_punctuation())
        };
        let after_punctuation = words
            .last()
            .is_some_and(|(_, t)| t.trim().chars().all(|c| c.is_ascii_punctuation()));
        match words.last_mut() {
            Some((r, t)) if !text.starts_with(' ') && !punctuation && !after_punctuation => {
                r.end = range.end;
                t.push_str(&text);
            }
            _ => words.push((range, text)),
        }
    }
    words
}

/// The UTF-8 text of `bytes` with every invalid or incomplete sequence
/// left out.
fn valid_text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).replace(char::REPLACEMENT_CHARACTER, "")
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

/// Marks that end a sentence (faster-whisper's `sentence_end_marks`).
const SENTENCE_END: &[&str] = &[".", "。", "!", "！", "?", "？"];

/// Alignment stretches a word over the pause next to it. As faster-whisper
/// (its "truncate long words at sentence boundaries"), with words longer
/// than twice the median (at most 1.4 s): a sentence-end mark keeps its
/// start (the pause after it is cut off), a word after one keeps its end
/// (the pause before it), and so does the window's first word. Other words
/// keep their times: cutting the start of a long sentence-final word would
/// move it into the pause after it, where it would be taken for noise.
fn fit_long_words(words: &mut [Word]) {
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
    for i in 0..words.len() {
        if words[i].end - words[i].start <= max {
            continue;
        }
        if SENTENCE_END.contains(&words[i].text.as_str()) {
            words[i].end = words[i].start + max;
        } else if i == 0 || SENTENCE_END.contains(&words[i - 1].text.as_str()) {
            words[i].start = words[i].end - max;
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

    fn bytes_of(pieces: &[&str]) -> Vec<Vec<u8>> {
        pieces.iter().map(|p| piece_bytes(p)).collect()
    }

    fn ranges(words: &[(std::ops::Range<usize>, String)]) -> Vec<std::ops::Range<usize>> {
        words.iter().map(|(r, _)| r.clone()).collect()
    }

    #[test]
    fn pieces_split_on_space_marker() {
        let words = split_words(&bytes_of(&["ĠHello", ",", "Ġwor", "ld", "!"]), true);
        assert_eq!(ranges(&words), vec![0..1, 1..2, 2..4, 4..5]);
        assert_eq!(words[2].1, " world");
    }

    /// GPT-2's byte table, both ways: every byte has one character.
    #[test]
    fn every_byte_has_a_piece_character() {
        assert_eq!(piece_bytes("Ġ"), vec![b' ']);
        assert_eq!(piece_bytes("Ċ"), vec![b'\n']);
        assert_eq!(piece_bytes("a"), vec![b'a']);
        // The last of the 68 stand-ins is U+0143 for byte 0xAD.
        assert_eq!(piece_bytes("\u{143}"), vec![0xAD]);
        let mut seen = std::collections::HashSet::new();
        for c in (33u32..=126)
            .chain(161..=172)
            .chain(174..=255)
            .chain(256..256 + 68)
        {
            let b = piece_bytes(&char::from_u32(c).unwrap().to_string());
            assert_eq!(b.len(), 1, "{c}");
            assert!(seen.insert(b[0]), "byte {} twice", b[0]);
        }
        assert_eq!(seen.len(), 256);
    }

    /// Pieces as byte-level BPE writes UTF-8 bytes: each byte as its table
    /// character.
    fn encode(text: &str) -> String {
        text.bytes()
            .map(|b| {
                (0u32..0x200)
                    .filter_map(char::from_u32)
                    .find(|&c| piece_bytes(&c.to_string()) == [b])
                    .unwrap()
            })
            .collect()
    }

    #[test]
    fn a_character_split_across_tokens_stays_whole() {
        // "운" (EC 9A B4) split after its first byte, then "동" whole; a
        // space-separated Korean word after it.
        let ko = encode(" 운동");
        let (head, tail) = ko.split_at(ko.char_indices().nth(2).unwrap().0);
        let pieces = [head, tail, &encode(" 좋아요")];
        let words = split_words(&bytes_of(&pieces), splits_on_spaces("ko"));
        assert_eq!(ranges(&words), vec![0..2, 2..3]);
        assert_eq!(words[0].1, " 운동");
        assert_eq!(words[1].1, " 좋아요");
        assert!(words.iter().all(|(_, t)| !t.contains('\u{FFFD}')));
    }

    #[test]
    fn mandarin_words_are_whole_characters() {
        // "学习" as three tokens: 学's first byte, its last two, then 习.
        let zh = encode("学习");
        let cut = |s: &str, n: usize| s.char_indices().nth(n).map(|(i, _)| i).unwrap_or(s.len());
        let (a, rest) = zh.split_at(cut(&zh, 1));
        let (b, c) = rest.split_at(cut(rest, 2));
        let words = split_words(&bytes_of(&[a, b, c]), splits_on_spaces("zh"));
        assert_eq!(ranges(&words), vec![0..2, 2..3]);
        assert_eq!(words[0].1, "学");
        assert_eq!(words[1].1, "习");
    }

    #[test]
    fn bytes_that_never_form_a_character_are_dropped() {
        // A lead byte followed by a plain word: no continuation ever comes.
        let lead = encode("é").chars().next().unwrap().to_string();
        let pieces = [
            encode(" gwel"),
            lead.clone(),
            "u".to_string(),
            encode(" ok"),
        ];
        let words = split_words(
            &bytes_of(&pieces.iter().map(String::as_str).collect::<Vec<_>>()),
            true,
        );
        let texts: Vec<&str> = words.iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(texts, [" gwelu", " ok"]);
        // An incomplete character at the very end is dropped too.
        let words = split_words(&bytes_of(&[&encode(" hi"), &lead]), true);
        assert_eq!(words[0].1, " hi");
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
    fn long_words_are_shortened_on_the_side_of_the_pause() {
        // "perfect document." then a pause, "And": the "." takes the pause.
        let mut words = vec![
            w("perfect", 0.0, 0.3),
            w("document", 0.3, 0.7),
            w(".", 0.7, 3.0),
            w("And", 3.0, 5.0),
            w("then", 5.0, 5.3),
        ];
        fit_long_words(&mut words);
        let max = 2.0 * 0.4;
        assert_eq!(
            (words[1].start, words[1].end),
            (0.3, 0.7),
            "document untouched"
        );
        assert!((words[2].end - (0.7 + max)).abs() < 1e-9, "{:?}", words[2]);
        assert!(
            (words[3].start - (5.0 - max)).abs() < 1e-9,
            "{:?}",
            words[3]
        );
        let merged = merge_punctuation(words);
        assert_eq!(merged[1].text, "document.");
        assert_eq!((merged[1].start, merged[1].end), (0.3, 0.7));
        // A long last word with no mark keeps its start (it was spoken
        // there); a long first word keeps its end (max 2 × 0.7 s).
        let mut words = vec![
            w("Well", 0.0, 2.0),
            w("the", 2.0, 2.2),
            w("process", 2.2, 4.0),
        ];
        fit_long_words(&mut words);
        assert!((words[0].start - 0.6).abs() < 1e-9, "{:?}", words[0]);
        assert_eq!(words[2].start, 2.2);
    }

    #[test]
    fn punctuation_is_its_own_word_until_merged() {
        let words = split_words(&bytes_of(&["Ġproperty", ".", "ĠAnd", "Ġdon", "'t"]), true);
        let texts: Vec<&str> = words.iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(texts, [" property", ".", " And", " don't"]);
    }
}
