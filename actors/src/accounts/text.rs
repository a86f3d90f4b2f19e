//! The rule for user text the server stores (names, titles, descriptions,
//! prompts, post captions): no bidi embedding, override or isolate
//! characters (U+202A–U+202E, U+2066–U+2069), which make stored text show
//! as something else, and no control characters — in free text ([`text_ok`])
//! line breaks and tabs are allowed, in a one-line field ([`line_ok`]) not;
//! names ([`name`]) are one line of 1 to 100 characters.

/// A bidi embedding, override or isolate character.
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// One-line text: no control and no bidi control characters.
pub fn line_ok(s: &str) -> bool {
    !s.chars().any(|c| c.is_control() || is_bidi_control(c))
}

/// Free text: as [`line_ok`], but line breaks and tabs are allowed.
pub fn text_ok(s: &str) -> bool {
    !s.chars()
        .any(|c| (c.is_control() && !matches!(c, '\n' | '\r' | '\t')) || is_bidi_control(c))
}

/// `s` without the characters [`line_ok`] refuses (for text the server
/// stores from elsewhere, such as a video platform's title).
pub fn clean_line(s: &str) -> String {
    s.chars()
        .filter(|&c| !(c.is_control() || is_bidi_control(c)))
        .collect()
}

/// Longest name (of an account, a caption template, an API key).
pub const NAME_MAX_CHARS: usize = 100;

/// A name as stored: trimmed, 1 to [`NAME_MAX_CHARS`] characters, one line
/// ([`line_ok`]).
pub(crate) fn name(name: &str) -> super::error::Result<String> {
    let name = name.trim();
    let chars = name.chars().count();
    if chars == 0 || chars > NAME_MAX_CHARS {
        return Err(super::error::AccountError::InvalidInput(format!(
            "name: must be 1 to {NAME_MAX_CHARS} characters"
        )));
    }
    if !line_ok(name) {
        return Err(super::error::AccountError::InvalidInput(
            "name: must not contain control or bidi override characters".into(),
        ));
    }
    Ok(name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_nul_and_bidi_overrides() {
        assert!(line_ok("Ana Souza — olá"));
        assert!(!line_ok("a\0b"));
        assert!(!line_ok("evil\u{202E}gpj.exe"));
        assert!(!line_ok("x\u{2066}y"));
        assert!(!line_ok("two\nlines"));
        assert!(text_ok("two\nlines\tand a tab"));
        assert!(!text_ok("nul\0"));
        assert!(!text_ok("rlo\u{202E}"));
        assert_eq!(clean_line("a\u{202E}b\0c"), "abc");
    }
}
