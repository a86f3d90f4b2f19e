//! ASS syntax: colours, override values, times, numbers, escaping, the
//! `Style:` and `Dialogue:` lines. No layout decisions here.

use std::fmt::Write as _;

use crate::captions::template::parse_color;

/// A colour in ASS terms: `alpha` 0 is opaque, 255 transparent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AssColor {
    pub r: u8,
    pub g: u8,
    pub b: u8,
    pub alpha: u8,
}

impl AssColor {
    pub(crate) const WHITE: Self = Self {
        r: 255,
        g: 255,
        b: 255,
        alpha: 0,
    };
    pub(crate) const BLACK: Self = Self {
        r: 0,
        g: 0,
        b: 0,
        alpha: 0,
    };

    /// From CSS "#RGB", "#RRGGBB" or "#RRGGBBAA" (CSS alpha FF = opaque).
    pub fn from_css(css: &str) -> Option<Self> {
        let (r, g, b, a) = parse_color(css)?;
        Some(Self {
            r,
            g,
            b,
            alpha: 255 - a,
        })
    }

    pub(crate) fn from_css_or(css: &str, fallback: Self) -> Self {
        Self::from_css(css).unwrap_or(fallback)
    }

    /// Style-line form `&HAABBGGRR&`.
    pub fn style_value(self) -> String {
        format!(
            "&H{:02X}{:02X}{:02X}{:02X}&",
            self.alpha, self.b, self.g, self.r
        )
    }

    /// Override form `&HBBGGRR&`, for `\c`, `\1c`, `\3c`…
    pub fn override_value(self) -> String {
        format!("&H{:02X}{:02X}{:02X}&", self.b, self.g, self.r)
    }
}

/// Alpha in override form `&HAA&`, for `\alpha`, `\1a`…
pub(crate) fn alpha_value(alpha: u8) -> String {
    format!("&H{alpha:02X}&")
}

/// The caption animations; unknown names behave as `None`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Animation {
    None,
    Fade,
    Pop,
    Bounce,
    Karaoke,
    Typewriter,
}

impl Animation {
    pub fn parse(name: &str) -> Self {
        match name.trim().to_ascii_lowercase().as_str() {
            "fade" => Self::Fade,
            "pop" => Self::Pop,
            "bounce" => Self::Bounce,
            "karaoke" => Self::Karaoke,
            "typewriter" => Self::Typewriter,
            _ => Self::None,
        }
    }
}

/// Makes text safe inside a Dialogue line: braces cannot open override
/// blocks, backslashes cannot start escapes (`\N`, `\h`), no line breaks.
pub fn escape_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '{' => out.push('('),
            '}' => out.push(')'),
            '\\' => out.push('/'),
            '\n' | '\r' | '\t' => out.push(' '),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// `H:MM:SS.cc` from centiseconds.
pub fn format_time(cs: u64) -> String {
    format!(
        "{}:{:02}:{:02}.{:02}",
        cs / 360_000,
        cs / 6_000 % 60,
        cs / 100 % 60,
        cs % 100
    )
}

pub(crate) fn to_cs(secs: f64) -> u64 {
    if secs.is_finite() && secs > 0.0 {
        (secs * 100.0).round() as u64
    } else {
        0
    }
}

/// Decimal with at most two digits after the point, no trailing zeros.
pub(crate) fn num(v: f64) -> String {
    let s = format!("{:.2}", v);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".to_string()
    } else {
        s.to_string()
    }
}

/// A `Style:` line of the [V4+ Styles] section (bold, no shadow, centred).
/// Encoding -1 makes libass detect each line's base direction: with the usual
/// 1 it lays out a Hebrew or Arabic line split by override tags (the
/// highlighted word) left to right, its first word on the left.
#[derive(Clone, Copy)]
pub(crate) struct StyleLine<'a> {
    pub(crate) name: &'a str,
    pub(crate) font: &'a str,
    pub(crate) size: f64,
    pub(crate) primary: AssColor,
    pub(crate) secondary: AssColor,
    pub(crate) outline_color: AssColor,
    pub(crate) border_style: u8,
    pub(crate) outline: f64,
}

impl std::fmt::Display for StyleLine<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let back = AssColor {
            alpha: 0x80,
            ..AssColor::BLACK
        };
        write!(
            f,
            "Style: {},{},{},{},{},{},{},-1,0,0,0,100,100,0,0,{},{},0,5,0,0,0,-1",
            self.name,
            self.font,
            num(self.size),
            self.primary.style_value(),
            self.secondary.style_value(),
            self.outline_color.style_value(),
            back.style_value(),
            self.border_style,
            num(self.outline),
        )
    }
}

pub(crate) fn push_dialogue(
    doc: &mut String,
    layer: u32,
    start: u64,
    end: u64,
    style: &str,
    text: &str,
) {
    let _ = writeln!(
        doc,
        "Dialogue: {layer},{},{},{style},,0,0,0,,{text}",
        format_time(start),
        format_time(end)
    );
}

/// A font name as a style field: escaped and without commas (the separator).
pub(crate) fn style_field(text: &str) -> String {
    let clean: String = escape_text(text).chars().filter(|&c| c != ',').collect();
    match clean.trim() {
        "" => "DejaVu Sans".to_string(),
        name => name.to_string(),
    }
}
