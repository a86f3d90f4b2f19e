//! Writing systems, as far as joining words into lines needs them: Chinese,
//! Japanese and Thai are written without spaces between words, so their words
//! are joined directly and a line may break between any two of their
//! characters. Right-to-left scripts (Arabic, Hebrew) need nothing here: text
//! stays in logical order and libass (FriBidi + HarfBuzz) and subtitle
//! players lay it out right to left.

/// Is `c` written without spaces around words (Han, kana, CJK punctuation,
/// full-width forms, Thai, Lao, Khmer, Myanmar)? Hangul uses spaces.
pub fn unspaced(c: char) -> bool {
    matches!(c as u32,
        0x0E00..=0x0EFF          // Thai, Lao
        | 0x1000..=0x109F        // Myanmar
        | 0x1780..=0x17FF        // Khmer
        | 0x2E80..=0x2FDF        // CJK radicals
        | 0x3000..=0x303F        // CJK symbols and punctuation
        | 0x3040..=0x30FF        // Hiragana, Katakana
        | 0x3100..=0x312F        // Bopomofo
        | 0x31F0..=0x31FF        // Katakana extensions
        | 0x3400..=0x4DBF        // CJK extension A
        | 0x4E00..=0x9FFF        // CJK unified ideographs
        | 0xF900..=0xFAFF        // CJK compatibility ideographs
        | 0xFF00..=0xFFEF        // full-width and half-width forms
        | 0x20000..=0x3FFFD) // CJK extensions B…
}

/// Is the whole word written without spaces (at least one such character
/// and no Latin letters or digits among them)?
pub fn unspaced_word(word: &str) -> bool {
    let mut any = false;
    for c in word.chars() {
        if unspaced(c) {
            any = true;
        } else if c.is_alphanumeric() {
            return false;
        }
    }
    any
}

/// What goes between two words of a line: nothing when both sides are
/// written without spaces, else one space.
pub fn separator(prev: &str, next: &str) -> &'static str {
    let last = prev.trim_end().chars().last();
    let first = next.trim_start().chars().next();
    match (last, first) {
        (Some(a), Some(b)) if unspaced(a) && unspaced(b) => "",
        _ => " ",
    }
}

/// The words joined with [`separator`].
pub fn join<'a>(words: impl IntoIterator<Item = &'a str>) -> String {
    let mut out = String::new();
    for w in words {
        let w = w.trim();
        if w.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push_str(separator(&out, w));
        }
        out.push_str(w);
    }
    out
}

/// Splits a word written without spaces into pieces of at most `max_chars`
/// characters (a line may break between any two of them); other words and
/// short words come back whole. Closing punctuation is never put at the
/// start of a piece (it stays with the character before it).
pub fn split_unspaced(word: &str, max_chars: usize) -> Vec<String> {
    let chars: Vec<char> = word.chars().collect();
    let max = max_chars.max(1);
    if chars.len() <= max || !unspaced_word(word) {
        return vec![word.to_string()];
    }
    let mut out = Vec::new();
    let mut at = 0;
    while at < chars.len() {
        let mut end = (at + max).min(chars.len());
        // Keep closing punctuation (、。，！？」) with the character before it.
        while end < chars.len() && end > at + 1 && closes(chars[end]) {
            end -= 1;
        }
        out.push(chars[at..end].iter().collect());
        at = end;
    }
    out
}

/// Punctuation that must not start a line (a small kinsoku set).
fn closes(c: char) -> bool {
    matches!(
        c,
        '、' | '。'
            | '，'
            | '．'
            | '！'
            | '？'
            | '：'
            | '；'
            | '」'
            | '』'
            | '）'
            | '】'
            | '〉'
            | '》'
            | 'ー'
            | '々'
            | '…'
            | ','
            | '.'
            | '!'
            | '?'
            | ')'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cjk_joins_without_spaces_and_latin_with() {
        assert_eq!(join(["你好", "世界"]), "你好世界");
        assert_eq!(join(["こんにちは", "世界。"]), "こんにちは世界。");
        assert_eq!(join(["hello", "world"]), "hello world");
        assert_eq!(join(["iPhone", "很好"]), "iPhone 很好");
        assert_eq!(join(["שלום", "עולם"]), "שלום עולם");
        assert_eq!(join(["안녕", "하세요"]), "안녕 하세요");
        assert_eq!(join(["สวัสดี", "ครับ"]), "สวัสดีครับ");
    }

    #[test]
    fn long_unspaced_words_split_between_characters() {
        let parts = split_unspaced("我们今天要讨论的是人工智能的未来发展", 8);
        assert_eq!(parts.iter().map(|p| p.chars().count()).max(), Some(8));
        assert_eq!(parts.concat(), "我们今天要讨论的是人工智能的未来发展");
        assert_eq!(
            split_unspaced("internationalization", 5),
            ["internationalization"]
        );
        // Closing punctuation stays at the end of a piece.
        let parts = split_unspaced("一二三四五六七、八九", 7);
        assert_eq!(parts, ["一二三四五六", "七、八九"]);
    }
}
