//! ASS documents for libass (ffmpeg's `ass` filter): word-by-word animated
//! captions in a caption template's style, plus the optional watermark.
//!
//! Times are handled in centiseconds (the resolution of ASS) so consecutive
//! events of a line meet exactly and never flicker.

use std::fmt::Write as _;
use std::ops::Range;

use crate::captions::template::{parse_color, CaptionStyle};
use crate::transcript::Word;

/// What [`build_ass`] needs besides the words and the style.
#[derive(Clone, Debug, PartialEq)]
pub struct AssOptions {
    /// Frame width in pixels (PlayResX).
    pub width: u32,
    /// Frame height in pixels (PlayResY).
    pub height: u32,
    /// Installed font family to use (see [`CaptionStyle::font_candidates`]).
    pub font_name: String,
    /// Text of the watermark, e.g. "clipforge".
    pub watermark_text: String,
    /// Clip length in seconds; no event lasts past it.
    pub duration: f64,
}

/// At most this many words on one caption line.
pub const MAX_WORDS_PER_LINE: usize = 4;
/// A caption line may take at most this share of the frame width.
pub const MAX_LINE_WIDTH_SHARE: f64 = 0.88;
/// A pause longer than this (seconds) between two words starts a new line.
pub const LINE_BREAK_PAUSE: f64 = 0.6;
/// A line stays on screen until the next one if the gap is shorter than this.
const LINE_HOLD_GAP: f64 = 0.5;
/// Otherwise it lingers this long after its last word.
const LINE_LINGER: f64 = 0.3;
/// Estimated advance of one character, as a share of the font size.
const CHAR_WIDTH_EM: f64 = 0.6;
/// The same for the watermark, calibrated on lower-case bold text so its
/// rendered width comes close to the requested share of the frame.
const WATERMARK_CHAR_WIDTH_EM: f64 = 0.5;
/// Reference frame the template's pixel sizes refer to.
const REFERENCE_WIDTH: f64 = 1080.0;
const REFERENCE_HEIGHT: f64 = 1920.0;
/// Fade in/out of the `fade` animation, milliseconds.
const FADE_MS: u64 = 180;
/// Scales (%) of the current word: `pop` peaks then rests; `bounce`
/// stretches up, squashes wide, then rests.
const POP_PEAK: u32 = 122;
const POP_REST: u32 = 112;
const BOUNCE_PEAK_X: u32 = 116;
const BOUNCE_PEAK_Y: u32 = 138;
const BOUNCE_REST: u32 = 110;
/// Watermark margin from the frame edges, share of width/height.
const WATERMARK_MARGIN: f64 = 0.04;
/// Background box when the template asks for one without a colour.
const DEFAULT_BACKGROUND: &str = "#000000AA";
/// Minimum padding of the background box, pixels on the reference frame.
const MIN_BOX_PADDING: f64 = 10.0;

const CAPTION_STYLE: &str = "Caption";
const BOX_STYLE: &str = "CaptionBox";
const WATERMARK_STYLE: &str = "Watermark";
const BOX_LAYER: u32 = 0;
const TEXT_LAYER: u32 = 1;
const WATERMARK_LAYER: u32 = 10;

/// A colour in ASS terms: `alpha` 0 is opaque, 255 transparent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AssColor {
    pub r: u8,
    pub g: u8,
    pub b: u8,
    pub alpha: u8,
}

impl AssColor {
    const WHITE: Self = Self {
        r: 255,
        g: 255,
        b: 255,
        alpha: 0,
    };
    const BLACK: Self = Self {
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

    fn from_css_or(css: &str, fallback: Self) -> Self {
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
fn alpha_value(alpha: u8) -> String {
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

/// Groups words into caption lines; see [`MAX_WORDS_PER_LINE`],
/// [`MAX_LINE_WIDTH_SHARE`] and [`LINE_BREAK_PAUSE`]. A line also ends after
/// sentence punctuation. A word is never split: one too wide for the frame
/// is a line of its own. The ranges cover `words` in order, without gaps.
pub fn group_words(words: &[Word], style: &CaptionStyle, opts: &AssOptions) -> Vec<Range<usize>> {
    let frame = Frame::new(style, opts);
    let mut lines = Vec::new();
    let mut first = 0usize;
    let mut units = 0.0;
    for (i, word) in words.iter().enumerate() {
        let word_units = text_units(word.text.trim());
        if i == first {
            units = word_units;
            continue;
        }
        let prev = &words[i - 1];
        let joined = units + 1.0 + word_units;
        let full =
            i - first >= MAX_WORDS_PER_LINE || frame.text_width(joined) > frame.max_line_width();
        let pause = word.start - prev.end > LINE_BREAK_PAUSE;
        if full || pause || ends_sentence(&prev.text) {
            lines.push(first..i);
            first = i;
            units = word_units;
        } else {
            units = joined;
        }
    }
    if first < words.len() {
        lines.push(first..words.len());
    }
    lines
}

/// A complete ASS document with the captions of `words` (on the clip's own
/// timeline) in `style`, and the watermark when the style enables it.
pub fn build_ass(words: &[Word], style: &CaptionStyle, opts: &AssOptions) -> String {
    let frame = Frame::new(style, opts);
    let limit = (opts.duration.is_finite() && opts.duration > 0.0).then(|| to_cs(opts.duration));
    let lines = timed_lines(words, &group_words(words, style, opts), limit);
    let renderer = Renderer {
        animation: Animation::parse(&style.animation),
        colors: Colors::new(style),
        x: frame.width / 2.0,
        y: frame.caption_y(style),
        frame,
    };

    let mut doc = String::new();
    renderer.write_header(&mut doc, style, opts);
    for line in &lines {
        let fit = renderer.fit_font_size(line);
        for event in renderer.line_events(line) {
            if style.background {
                let text = renderer.box_text(line, &event, fit);
                push_dialogue(
                    &mut doc,
                    BOX_LAYER,
                    event.start,
                    event.end,
                    BOX_STYLE,
                    &text,
                );
            }
            let text = renderer.event_text(line, &event, fit);
            push_dialogue(
                &mut doc,
                TEXT_LAYER,
                event.start,
                event.end,
                CAPTION_STYLE,
                &text,
            );
        }
    }
    if style.watermark_enabled {
        let end = limit.unwrap_or_else(|| lines.iter().map(|l| l.end).max().unwrap_or(0));
        renderer.push_watermark(&mut doc, style, opts, end);
    }
    doc
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

fn to_cs(secs: f64) -> u64 {
    if secs.is_finite() && secs > 0.0 {
        (secs * 100.0).round() as u64
    } else {
        0
    }
}

/// Decimal with at most two digits after the point, no trailing zeros.
fn num(v: f64) -> String {
    let s = format!("{:.2}", v);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".to_string()
    } else {
        s.to_string()
    }
}

fn ends_sentence(text: &str) -> bool {
    let t = text
        .trim()
        .trim_end_matches(['"', '\'', ')', ']', '»', '”', '’']);
    t.ends_with(['.', '?', '!', '…', '。', '？', '！'])
}

/// Width of text in "average characters": CJK and other wide characters count
/// for about one em, the rest for [`CHAR_WIDTH_EM`].
fn text_units(text: &str) -> f64 {
    text.chars()
        .map(|c| if is_wide(c) { 1.0 / CHAR_WIDTH_EM } else { 1.0 })
        .sum()
}

fn is_wide(c: char) -> bool {
    matches!(c as u32,
        0x1100..=0x115F | 0x2E80..=0x303E | 0x3041..=0x33FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF
        | 0xA000..=0xA4CF | 0xAC00..=0xD7A3 | 0xF900..=0xFAFF | 0xFE30..=0xFE4F | 0xFF00..=0xFF60
        | 0xFFE0..=0xFFE6 | 0x1F300..=0x1FAFF | 0x20000..=0x3FFFD)
}

/// Sizes of the frame and of the caption font on it.
struct Frame {
    width: f64,
    height: f64,
    /// Template pixels → frame pixels.
    scale: f64,
    font_px: f64,
}

impl Frame {
    fn new(style: &CaptionStyle, opts: &AssOptions) -> Self {
        let width = if opts.width > 0 {
            f64::from(opts.width)
        } else {
            REFERENCE_WIDTH
        };
        let height = if opts.height > 0 {
            f64::from(opts.height)
        } else {
            REFERENCE_HEIGHT
        };
        let scale = height / REFERENCE_HEIGHT;
        let font_size = if style.font_size.is_finite() && style.font_size > 0.0 {
            style.font_size
        } else {
            72.0
        };
        Self {
            width,
            height,
            scale,
            font_px: font_size * scale,
        }
    }

    fn max_line_width(&self) -> f64 {
        self.width * MAX_LINE_WIDTH_SHARE
    }

    fn text_width(&self, units: f64) -> f64 {
        units * self.font_px * CHAR_WIDTH_EM
    }

    fn caption_y(&self, style: &CaptionStyle) -> f64 {
        let p = if style.position_y.is_finite() {
            style.position_y.clamp(0.0, 100.0)
        } else {
            72.0
        };
        self.height * p / 100.0
    }
}

/// The colours of the caption text.
struct Colors {
    font: AssColor,
    highlight: AssColor,
    stroke: AssColor,
    background: AssColor,
}

impl Colors {
    fn new(style: &CaptionStyle) -> Self {
        let background = style
            .background_color
            .as_deref()
            .and_then(AssColor::from_css)
            .or_else(|| AssColor::from_css(DEFAULT_BACKGROUND))
            .unwrap_or(AssColor {
                alpha: 0x55,
                ..AssColor::BLACK
            });
        Self {
            font: AssColor::from_css_or(&style.font_color, AssColor::WHITE),
            highlight: AssColor::from_css_or(&style.highlight_color, AssColor::WHITE),
            stroke: AssColor::from_css_or(&style.stroke_color, AssColor::BLACK),
            background,
        }
    }
}

/// One word of a caption line, times in centiseconds.
struct TimedWord {
    text: String,
    start: u64,
    end: u64,
}

/// A caption line with its display interval.
struct TimedLine {
    words: Vec<TimedWord>,
    start: u64,
    end: u64,
}

/// Turns the groups into lines with display intervals: empty words are
/// dropped, starts made monotonic, a line is held until the next one across
/// short gaps, and nothing lasts past `limit`.
fn timed_lines(words: &[Word], groups: &[Range<usize>], limit: Option<u64>) -> Vec<TimedLine> {
    let mut lines: Vec<TimedLine> = Vec::new();
    let mut floor = 0u64;
    for range in groups {
        let mut line_words = Vec::new();
        for word in &words[range.clone()] {
            let text = escape_text(word.text.trim());
            if text.trim().is_empty() {
                continue;
            }
            let start = to_cs(word.start).max(floor);
            let end = to_cs(word.end).max(start);
            floor = start;
            line_words.push(TimedWord { text, start, end });
        }
        if let Some(first) = line_words.first() {
            let start = first.start;
            lines.push(TimedLine {
                start,
                end: start,
                words: line_words,
            });
        }
    }
    let linger = to_cs(LINE_LINGER);
    let hold_gap = to_cs(LINE_HOLD_GAP);
    let next_starts: Vec<Option<u64>> = (0..lines.len())
        .map(|i| lines.get(i + 1).map(|l| l.start))
        .collect();
    for (line, next_start) in lines.iter_mut().zip(next_starts) {
        let last_end = line.words.iter().map(|w| w.end).max().unwrap_or(line.start);
        let mut end = match next_start {
            Some(next) if next < last_end + hold_gap => next,
            _ => last_end + linger,
        };
        if let Some(limit) = limit {
            end = end.min(limit);
        }
        line.end = end;
    }
    lines.retain(|l| l.end > l.start);
    lines
}

/// One Dialogue event of a line. `current` is the highlighted word; karaoke
/// has a single event per line and no current word.
struct LineEvent {
    start: u64,
    end: u64,
    current: Option<usize>,
    fade_in_ms: u64,
    fade_out_ms: u64,
}

/// Everything fixed for one document.
struct Renderer {
    frame: Frame,
    animation: Animation,
    colors: Colors,
    /// Centre of the caption lines.
    x: f64,
    y: f64,
}

impl Renderer {
    /// A smaller font size when a line (a single over-long word) would not fit.
    fn fit_font_size(&self, line: &TimedLine) -> Option<f64> {
        let spaces = line.words.len().saturating_sub(1) as f64;
        let units = line.words.iter().map(|w| text_units(&w.text)).sum::<f64>() + spaces;
        let width = self.frame.text_width(units);
        let max = self.frame.max_line_width();
        (width > max).then(|| (self.frame.font_px * max / width).max(1.0))
    }

    /// One event per word, from its start to the next word's start (the last
    /// until the line's end); karaoke: one event for the whole line.
    fn line_events(&self, line: &TimedLine) -> Vec<LineEvent> {
        if self.animation == Animation::Karaoke {
            return vec![LineEvent {
                start: line.start,
                end: line.end,
                current: None,
                fade_in_ms: 0,
                fade_out_ms: 0,
            }];
        }
        let mut events: Vec<LineEvent> = Vec::new();
        for (k, word) in line.words.iter().enumerate() {
            let start = if k == 0 {
                line.start
            } else {
                word.start.min(line.end)
            };
            let end = line
                .words
                .get(k + 1)
                .map_or(line.end, |next| next.start.min(line.end));
            if end > start {
                events.push(LineEvent {
                    start,
                    end,
                    current: Some(k),
                    fade_in_ms: 0,
                    fade_out_ms: 0,
                });
            }
        }
        if self.animation == Animation::Fade {
            if let Some(first) = events.first_mut() {
                first.fade_in_ms = FADE_MS.min((first.end - first.start) * 10 / 2);
            }
            if let Some(last) = events.last_mut() {
                last.fade_out_ms = FADE_MS.min((last.end - last.start) * 10 / 2);
            }
        }
        events
    }

    /// `{\an5\pos(..)}` plus the line's font-size fit and the event's fade.
    fn event_prefix(&self, event: &LineEvent, fit: Option<f64>, extra: &str) -> String {
        let mut out = String::new();
        let _ = write!(out, "{{\\an5\\pos({},{})", num(self.x), num(self.y));
        if let Some(size) = fit {
            let _ = write!(out, "\\fs{}", num(size));
        }
        if event.fade_in_ms > 0 || event.fade_out_ms > 0 {
            let _ = write!(out, "\\fad({},{})", event.fade_in_ms, event.fade_out_ms);
        }
        out.push_str(extra);
        out.push('}');
        out
    }

    /// The visible text: the words with the current one highlighted and
    /// animated, or the karaoke sweep.
    fn event_text(&self, line: &TimedLine, event: &LineEvent, fit: Option<f64>) -> String {
        let mut out = self.event_prefix(event, fit, "");
        let Some(current) = event.current else {
            karaoke_words(&mut out, line);
            return out;
        };
        let (open, close) = self.current_word_tags();
        let last = line.words.len() - 1;
        for (j, word) in line.words.iter().enumerate() {
            if j > 0 {
                out.push(' ');
            }
            if j != current {
                out.push_str(&word.text);
                continue;
            }
            let _ = write!(out, "{{{open}}}{}", word.text);
            if j < last && !close.is_empty() {
                let _ = write!(out, "{{{close}}}");
            }
        }
        out
    }

    /// The text of the background-box layer. libass draws one box per glyph
    /// run and override tags split runs, so this text has none inside the
    /// line (overlapping translucent boxes would show darker bands): the box
    /// stays still while the current word grows, and is padded to cover that
    /// growth. Typewriter hides the words not spoken yet, box included.
    fn box_text(&self, line: &TimedLine, event: &LineEvent, fit: Option<f64>) -> String {
        let (grow_x, grow_y) = match self.animation {
            Animation::Pop => (POP_PEAK, POP_PEAK),
            Animation::Bounce => (BOUNCE_PEAK_X, BOUNCE_PEAK_Y),
            _ => (100, 100),
        };
        let mut extra = String::new();
        if grow_x > 100 || grow_y > 100 {
            let font_px = fit.unwrap_or(self.frame.font_px);
            let widest = line
                .words
                .iter()
                .map(|w| text_units(&w.text))
                .fold(0.0, f64::max);
            let word_px = widest * font_px * CHAR_WIDTH_EM;
            let pad = self.box_padding();
            let x = pad + word_px * f64::from(grow_x - 100) / 200.0;
            let y = pad + font_px * f64::from(grow_y - 100) / 200.0;
            let _ = write!(extra, "\\xbord{}\\ybord{}", num(x), num(y));
        }
        let mut out = self.event_prefix(event, fit, &extra);
        let shown = match (self.animation, event.current) {
            (Animation::Typewriter, Some(current)) => current + 1,
            _ => line.words.len(),
        };
        for (j, word) in line.words.iter().enumerate() {
            if j == shown {
                let _ = write!(out, "{{\\alpha{}}}", alpha_value(0xFF));
            }
            if j > 0 {
                out.push(' ');
            }
            out.push_str(&word.text);
        }
        out
    }

    /// Padding of the background box around the text.
    fn box_padding(&self) -> f64 {
        (self.frame.font_px * 0.2).max(MIN_BOX_PADDING * self.frame.scale)
    }

    /// Override tags before and after the current word: the highlight colour,
    /// the animation, and what the words after it look like.
    fn current_word_tags(&self) -> (String, String) {
        let mut open = String::new();
        let mut close = String::new();
        let (font, highlight) = (self.colors.font, self.colors.highlight);
        let _ = write!(open, "\\c{}", highlight.override_value());
        let _ = write!(close, "\\c{}", font.override_value());
        if highlight.alpha != font.alpha {
            let _ = write!(open, "\\1a{}", alpha_value(highlight.alpha));
            let _ = write!(close, "\\1a{}", alpha_value(font.alpha));
        }
        match self.animation {
            // Grows quickly, then settles slightly larger than the rest.
            Animation::Pop => {
                let _ = write!(
                    open,
                    "\\fscx100\\fscy100\\t(0,90,\\fscx{POP_PEAK}\\fscy{POP_PEAK})\\t(90,200,\\fscx{POP_REST}\\fscy{POP_REST})"
                );
                close.push_str("\\fscx100\\fscy100");
            }
            // Glyphs scale up from the baseline: a tall stretch reads as a
            // jump, then a squash as it lands, then a rest.
            Animation::Bounce => {
                let _ = write!(
                    open,
                    "\\fscx100\\fscy100\\t(0,100,\\fscx108\\fscy{BOUNCE_PEAK_Y})\\t(100,190,\\fscx{BOUNCE_PEAK_X}\\fscy90)\\t(190,280,\\fscx{BOUNCE_REST}\\fscy{BOUNCE_REST})"
                );
                close.push_str("\\fscx100\\fscy100");
            }
            // Words not spoken yet keep their place but are invisible.
            Animation::Typewriter => {
                let _ = write!(close, "\\alpha{}", alpha_value(0xFF));
            }
            Animation::None | Animation::Fade | Animation::Karaoke => {}
        }
        (open, close)
    }

    fn write_header(&self, doc: &mut String, style: &CaptionStyle, opts: &AssOptions) {
        let frame = &self.frame;
        let colors = &self.colors;
        let font = style_field(&opts.font_name);
        let _ = writeln!(doc, "[Script Info]");
        let _ = writeln!(doc, "; Generated by Clipforge");
        let _ = writeln!(doc, "ScriptType: v4.00+");
        let _ = writeln!(doc, "PlayResX: {}", frame.width.round());
        let _ = writeln!(doc, "PlayResY: {}", frame.height.round());
        let _ = writeln!(doc, "ScaledBorderAndShadow: yes");
        let _ = writeln!(doc, "WrapStyle: 2");
        let _ = writeln!(doc, "YCbCr Matrix: None");
        let _ = writeln!(doc);
        let _ = writeln!(doc, "[V4+ Styles]");
        let _ = writeln!(
            doc,
            "Format: Name, Fontname, Fontsize, PrimaryColour, SecondaryColour, OutlineColour, BackColour, Bold, \
             Italic, Underline, StrikeOut, ScaleX, ScaleY, Spacing, Angle, BorderStyle, Outline, Shadow, Alignment, \
             MarginL, MarginR, MarginV, Encoding"
        );
        // Karaoke fills each word from SecondaryColour to PrimaryColour.
        let (primary, secondary) = if self.animation == Animation::Karaoke {
            (colors.highlight, colors.font)
        } else {
            (colors.font, colors.highlight)
        };
        let stroke = if style.stroke_width.is_finite() {
            style.stroke_width.max(0.0) * frame.scale
        } else {
            0.0
        };
        let caption = StyleLine {
            name: CAPTION_STYLE,
            font: &font,
            size: frame.font_px,
            primary,
            secondary,
            outline_color: colors.stroke,
            border_style: 1,
            outline: stroke,
        };
        let _ = writeln!(doc, "{caption}");
        if style.background {
            // libass draws the BorderStyle=3 box in OutlineColour, padded by
            // Outline. Its glyphs are invisible: the text layer above draws
            // them with their own stroke.
            let hidden = AssColor {
                alpha: 0xFF,
                ..colors.font
            };
            let boxed = StyleLine {
                name: BOX_STYLE,
                primary: hidden,
                secondary: hidden,
                outline_color: colors.background,
                border_style: 3,
                outline: self.box_padding(),
                ..caption
            };
            let _ = writeln!(doc, "{boxed}");
        }
        if style.watermark_enabled {
            let size = watermark_font_size(style, opts, frame);
            let watermark = StyleLine {
                name: WATERMARK_STYLE,
                size,
                primary: AssColor::WHITE,
                secondary: AssColor::WHITE,
                outline_color: AssColor {
                    alpha: 0x40,
                    ..AssColor::BLACK
                },
                border_style: 1,
                outline: (size * 0.06).max(1.0),
                ..caption
            };
            let _ = writeln!(doc, "{watermark}");
        }
        let _ = writeln!(doc);
        let _ = writeln!(doc, "[Events]");
        let _ = writeln!(
            doc,
            "Format: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text"
        );
    }

    fn push_watermark(&self, doc: &mut String, style: &CaptionStyle, opts: &AssOptions, end: u64) {
        let text = escape_text(opts.watermark_text.trim());
        if text.trim().is_empty() || end == 0 {
            return;
        }
        let opacity = if style.watermark_opacity.is_finite() {
            style.watermark_opacity.clamp(0.0, 1.0)
        } else {
            0.6
        };
        let alpha = ((1.0 - opacity) * 255.0).round() as u8;
        let (an, x, y) = watermark_anchor(
            &style.watermark_position,
            self.frame.width,
            self.frame.height,
        );
        let text = format!(
            "{{\\an{an}\\pos({},{})\\alpha{}}}{}",
            num(x),
            num(y),
            alpha_value(alpha),
            text.trim()
        );
        push_dialogue(doc, WATERMARK_LAYER, 0, end, WATERMARK_STYLE, &text);
    }
}

/// A `Style:` line of the [V4+ Styles] section (bold, no shadow, centred).
#[derive(Clone, Copy)]
struct StyleLine<'a> {
    name: &'a str,
    font: &'a str,
    size: f64,
    primary: AssColor,
    secondary: AssColor,
    outline_color: AssColor,
    border_style: u8,
    outline: f64,
}

impl std::fmt::Display for StyleLine<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let back = AssColor {
            alpha: 0x80,
            ..AssColor::BLACK
        };
        write!(
            f,
            "Style: {},{},{},{},{},{},{},-1,0,0,0,100,100,0,0,{},{},0,5,0,0,0,1",
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

/// `{\kf<cs>}word` for each word: a word fills from its start until the
/// next word starts (the last one until it ends), and an empty `\k` covers
/// the rest of the line, so the durations sum to the line's duration.
fn karaoke_words(out: &mut String, line: &TimedLine) {
    let mut at = line.start;
    for (j, word) in line.words.iter().enumerate() {
        let end = line
            .words
            .get(j + 1)
            .map_or(word.end, |next| next.start)
            .clamp(at, line.end);
        if j > 0 {
            out.push(' ');
        }
        let _ = write!(out, "{{\\kf{}}}{}", end - at, word.text);
        at = end;
    }
    if line.end > at {
        let _ = write!(out, "{{\\k{}}}", line.end - at);
    }
}

fn push_dialogue(doc: &mut String, layer: u32, start: u64, end: u64, style: &str, text: &str) {
    let _ = writeln!(
        doc,
        "Dialogue: {layer},{},{},{style},,0,0,0,,{text}",
        format_time(start),
        format_time(end)
    );
}

/// A font name as a style field: escaped and without commas (the separator).
fn style_field(text: &str) -> String {
    let clean: String = escape_text(text).chars().filter(|&c| c != ',').collect();
    match clean.trim() {
        "" => "DejaVu Sans".to_string(),
        name => name.to_string(),
    }
}

/// Font size that makes the watermark about `watermark_size` % of the width.
fn watermark_font_size(style: &CaptionStyle, opts: &AssOptions, frame: &Frame) -> f64 {
    let share = if style.watermark_size.is_finite() {
        style.watermark_size.clamp(1.0, 100.0)
    } else {
        18.0
    };
    let units = text_units(escape_text(opts.watermark_text.trim()).trim()).max(1.0);
    (frame.width * share / 100.0 / (units * WATERMARK_CHAR_WIDTH_EM)).clamp(4.0, frame.height / 4.0)
}

/// `\an` and anchor point of the watermark for
/// "{top|middle|bottom}-{left|center|right}", with a margin from the edges;
/// unknown parts fall back to bottom / right.
pub fn watermark_anchor(position: &str, width: f64, height: f64) -> (u8, f64, f64) {
    let p = position.trim().to_ascii_lowercase();
    let (v, h) = p.split_once('-').unwrap_or(("bottom", "right"));
    let (row, y) = match v {
        "top" => (7, height * WATERMARK_MARGIN),
        "middle" | "center" => (4, height / 2.0),
        _ => (1, height * (1.0 - WATERMARK_MARGIN)),
    };
    let (col, x) = match h {
        "left" => (0, width * WATERMARK_MARGIN),
        "center" | "middle" => (1, width / 2.0),
        _ => (2, width * (1.0 - WATERMARK_MARGIN)),
    };
    (row + col, x, y)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(text: &str, start: f64, end: f64) -> Word {
        Word {
            text: text.into(),
            start,
            end,
            probability: 1.0,
        }
    }

    /// Words of `text`, one every `step` seconds, each lasting 80% of it.
    fn words(text: &str, step: f64) -> Vec<Word> {
        text.split_whitespace()
            .enumerate()
            .map(|(i, t)| w(t, i as f64 * step, i as f64 * step + step * 0.8))
            .collect()
    }

    fn opts() -> AssOptions {
        AssOptions {
            width: 1080,
            height: 1920,
            font_name: "DejaVu Sans".into(),
            watermark_text: "clipforge".into(),
            duration: 30.0,
        }
    }

    fn style(animation: &str) -> CaptionStyle {
        CaptionStyle {
            animation: animation.into(),
            ..CaptionStyle::default()
        }
    }

    #[derive(Debug)]
    struct Dialogue {
        layer: u32,
        start: String,
        end: String,
        style: String,
        text: String,
    }

    fn dialogues(doc: &str) -> Vec<Dialogue> {
        doc.lines()
            .filter_map(|l| l.strip_prefix("Dialogue: "))
            .map(|l| {
                let f: Vec<&str> = l.splitn(10, ',').collect();
                assert_eq!(f.len(), 10, "malformed dialogue {l}");
                Dialogue {
                    layer: f[0].parse().unwrap(),
                    start: f[1].into(),
                    end: f[2].into(),
                    style: f[3].into(),
                    text: f[9].into(),
                }
            })
            .collect()
    }

    fn captions(doc: &str) -> Vec<Dialogue> {
        dialogues(doc)
            .into_iter()
            .filter(|d| d.style == CAPTION_STYLE)
            .collect()
    }

    fn style_line<'a>(doc: &'a str, name: &str) -> Option<Vec<&'a str>> {
        doc.lines()
            .find_map(|l| {
                l.strip_prefix("Style: ")
                    .filter(|s| s.starts_with(&format!("{name},")))
            })
            .map(|s| s.split(',').collect())
    }

    /// Centiseconds of `H:MM:SS.cc`.
    fn cs(t: &str) -> u64 {
        let (hms, c) = t.split_once('.').unwrap();
        let p: Vec<u64> = hms.split(':').map(|x| x.parse().unwrap()).collect();
        ((p[0] * 60 + p[1]) * 60 + p[2]) * 100 + c.parse::<u64>().unwrap()
    }

    /// The caption text without override blocks.
    fn plain(text: &str) -> String {
        let mut out = String::new();
        let mut depth = 0;
        for c in text.chars() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                c if depth == 0 => out.push(c),
                _ => {}
            }
        }
        out
    }

    #[test]
    fn colors_convert_to_ass_order_and_inverted_alpha() {
        let red = AssColor::from_css("#FF0000").unwrap();
        assert_eq!(red.style_value(), "&H000000FF&");
        assert_eq!(red.override_value(), "&H0000FF&");
        let green = AssColor::from_css("#00FF0080").unwrap();
        assert_eq!(green.style_value(), "&H7F00FF00&");
        assert_eq!(
            AssColor::from_css("#11223300").unwrap().style_value(),
            "&HFF332211&"
        );
        assert_eq!(
            AssColor::from_css("#abc").unwrap().style_value(),
            "&H00CCBBAA&"
        );
        assert_eq!(AssColor::from_css("blue"), None);
    }

    #[test]
    fn grouping_covers_every_word_once_within_limits() {
        let text = "so this is a fairly long stretch of speech without any punctuation at all and it keeps \
                    going with words like incomprehensibilities and internationalization mixed in between";
        let ws = words(text, 0.3);
        let s = CaptionStyle {
            font_size: 96.0,
            ..CaptionStyle::default()
        };
        let frame = Frame::new(&s, &opts());
        let groups = group_words(&ws, &s, &opts());
        let mut next = 0;
        for g in &groups {
            assert_eq!(g.start, next, "groups must be contiguous");
            assert!(!g.is_empty() && g.len() <= MAX_WORDS_PER_LINE, "{g:?}");
            let line: Vec<&str> = ws[g.clone()].iter().map(|w| w.text.as_str()).collect();
            let units = text_units(&line.join(" "));
            assert!(
                g.len() == 1 || frame.text_width(units) <= frame.max_line_width(),
                "{line:?} too wide"
            );
            next = g.end;
        }
        assert_eq!(next, ws.len());
        assert!(
            groups.iter().any(|g| g.len() < MAX_WORDS_PER_LINE),
            "width never limited a line"
        );
    }

    #[test]
    fn grouping_breaks_after_sentences_and_pauses() {
        let ws = vec![
            w("Hi", 0.0, 0.2),
            w("there.", 0.3, 0.5),
            w("How", 0.6, 0.8),
            w("are", 0.9, 1.0),
            w("you", 2.0, 2.2),
            w("doing?", 2.3, 2.6),
        ];
        assert_eq!(
            group_words(&ws, &style("none"), &opts()),
            vec![0..2, 2..4, 4..6]
        );
    }

    #[test]
    fn an_overlong_word_is_its_own_line_and_shrunk_to_fit() {
        let ws = vec![
            w("a", 0.0, 0.2),
            w("Pneumonoultramicroscopicsilicovolcanoconiosis", 0.3, 1.5),
            w("b", 1.6, 1.8),
        ];
        let s = style("none");
        assert_eq!(group_words(&ws, &s, &opts()), vec![0..1, 1..2, 2..3]);
        let doc = build_ass(&ws, &s, &opts());
        let long = captions(&doc)
            .into_iter()
            .find(|d| d.text.contains("Pneumono"))
            .unwrap();
        assert!(long.text.contains("\\fs"), "{}", long.text);
        assert!(!captions(&doc)
            .iter()
            .any(|d| d.text.contains("\\fs") && !d.text.contains("Pneumono")));
    }

    #[test]
    fn header_has_frame_size_and_font() {
        let o = AssOptions {
            width: 720,
            height: 1280,
            font_name: "Liberation Sans".into(),
            ..opts()
        };
        let doc = build_ass(&words("one two", 0.5), &style("none"), &o);
        for needle in [
            "[Script Info]",
            "PlayResX: 720\n",
            "PlayResY: 1280\n",
            "ScaledBorderAndShadow: yes",
            "WrapStyle: 2",
        ] {
            assert!(doc.contains(needle), "missing {needle}");
        }
        assert!(doc.contains("[V4+ Styles]") && doc.contains("[Events]"));
        let caption = style_line(&doc, CAPTION_STYLE).unwrap();
        assert_eq!(caption[1], "Liberation Sans");
        // 72 px on 1920 → 48 on 1280; stroke 4 → 2.67.
        assert_eq!(caption[2], "48");
        assert_eq!(caption[16], "2.67");
    }

    #[test]
    fn current_word_is_highlighted_in_its_own_event() {
        let s = CaptionStyle {
            highlight_color: "#00FF00".into(),
            font_color: "#FFFFFF".into(),
            ..style("none")
        };
        let ws = words("alpha beta gamma", 0.5);
        let events = captions(&build_ass(&ws, &s, &opts()));
        assert_eq!(events.len(), 3);
        for (i, e) in events.iter().enumerate() {
            let (_, after) = e.text.split_once("{\\c&H00FF00&}").unwrap();
            assert!(
                after.starts_with(&ws[i].text),
                "event {i} highlights the wrong word: {}",
                e.text
            );
            assert_eq!(e.text.matches("\\c&H00FF00&").count(), 1);
            assert_eq!(cs(&e.start), (i as u64) * 50);
            assert_eq!(plain(&e.text), "alpha beta gamma");
        }
        // The highlight is reset to the font colour after the current word.
        assert!(events[0].text.contains("alpha{\\c&HFFFFFF&} beta"));
        // Events of a line meet exactly; the last lingers after the last word.
        assert_eq!(events[0].end, events[1].start);
        assert_eq!(cs(&events[2].end), 50 * 2 + 40 + 30);
    }

    #[test]
    fn lines_hold_through_short_gaps_and_stop_at_the_clip_end() {
        let ws = vec![
            w("One.", 0.0, 0.5),
            w("Two.", 0.8, 1.2),
            w("Three.", 3.0, 3.5),
            w("Four.", 9.8, 10.4),
        ];
        let o = AssOptions {
            duration: 10.0,
            ..opts()
        };
        let events = captions(&build_ass(&ws, &style("none"), &o));
        let spans: Vec<(u64, u64)> = events.iter().map(|e| (cs(&e.start), cs(&e.end))).collect();
        assert_eq!(spans, vec![(0, 80), (80, 150), (300, 380), (980, 1000)]);
    }

    #[test]
    fn position_y_moves_the_line() {
        let ws = words("hello world", 0.5);
        let at = |y: f64| {
            let s = CaptionStyle {
                position_y: y,
                ..style("none")
            };
            captions(&build_ass(&ws, &s, &opts()))[0].text.clone()
        };
        assert!(at(50.0).starts_with("{\\an5\\pos(540,960)"));
        assert!(at(25.0).starts_with("{\\an5\\pos(540,480)"));
    }

    #[test]
    fn karaoke_sweeps_with_durations_summing_to_the_line() {
        let s = CaptionStyle {
            font_color: "#FFFFFF".into(),
            highlight_color: "#FF3B8D".into(),
            ..style("karaoke")
        };
        let ws = vec![
            w("sing", 0.0, 0.4),
            w("along", 0.6, 1.1),
            w("now", 1.2, 1.5),
            w("Next", 4.0, 4.4),
        ];
        let doc = build_ass(&ws, &s, &opts());
        let caption = style_line(&doc, CAPTION_STYLE).unwrap();
        assert_eq!(caption[3], "&H008D3BFF&", "primary = highlight");
        assert_eq!(caption[4], "&H00FFFFFF&", "secondary = font");
        let events = captions(&doc);
        assert_eq!(events.len(), 2, "one event per line");
        for e in &events {
            let total: u64 = e
                .text
                .split('{')
                .filter_map(|b| b.strip_prefix("\\kf").or_else(|| b.strip_prefix("\\k")))
                .map(|b| b.split('}').next().unwrap().parse::<u64>().unwrap())
                .sum();
            assert_eq!(total, cs(&e.end) - cs(&e.start), "{}", e.text);
        }
        assert!(
            events[0]
                .text
                .contains("{\\kf60}sing {\\kf60}along {\\kf30}now"),
            "{}",
            events[0].text
        );
    }

    #[test]
    fn fade_fades_the_line_in_and_out() {
        let events = captions(&build_ass(
            &words("one two three", 0.5),
            &style("fade"),
            &opts(),
        ));
        assert!(events[0].text.contains("\\fad(180,0)"));
        assert!(!events[1].text.contains("\\fad"));
        assert!(events[2].text.contains("\\fad(0,180)"));
    }

    #[test]
    fn pop_and_bounce_animate_only_the_current_word() {
        for anim in ["pop", "bounce"] {
            let events = captions(&build_ass(
                &words("one two three", 0.5),
                &style(anim),
                &opts(),
            ));
            for e in &events {
                assert_eq!(
                    e.text.matches("\\t(").count(),
                    if anim == "pop" { 2 } else { 3 },
                    "{}",
                    e.text
                );
                assert!(e.text.contains("\\fscy"));
            }
            // The words after the current one are back to normal size.
            assert!(events[1].text.contains("\\fscx100\\fscy100} three"));
        }
    }

    #[test]
    fn typewriter_hides_words_not_spoken_yet() {
        let events = captions(&build_ass(
            &words("one two three", 0.5),
            &style("typewriter"),
            &opts(),
        ));
        let hidden_after = |t: &str| {
            t.split_once("\\alpha&HFF&}")
                .map(|(_, rest)| rest.to_string())
        };
        assert_eq!(hidden_after(&events[0].text).as_deref(), Some(" two three"));
        assert_eq!(hidden_after(&events[1].text).as_deref(), Some(" three"));
        assert_eq!(hidden_after(&events[2].text), None);
        assert!(
            events.iter().all(|e| plain(&e.text) == "one two three"),
            "layout must not move"
        );
    }

    #[test]
    fn unknown_animation_is_static() {
        let plain_doc = build_ass(&words("one two", 0.5), &style("none"), &opts());
        let unknown = build_ass(&words("one two", 0.5), &style("spin"), &opts());
        assert_eq!(plain_doc, unknown);
        assert!(
            !unknown.contains("\\t(") && !unknown.contains("\\fad") && !unknown.contains("\\k")
        );
    }

    #[test]
    fn background_draws_a_box_layer_under_the_text() {
        let ws = words("boxed text", 0.5);
        let none = build_ass(&ws, &style("pop"), &opts());
        assert!(style_line(&none, BOX_STYLE).is_none());
        assert_eq!(style_line(&none, CAPTION_STYLE).unwrap()[15], "1");

        let s = CaptionStyle {
            background: true,
            background_color: Some("#11223380".into()),
            ..style("pop")
        };
        let doc = build_ass(&ws, &s, &opts());
        let boxed = style_line(&doc, BOX_STYLE).unwrap();
        assert_eq!(boxed[15], "3", "BorderStyle");
        assert_eq!(boxed[5], "&H7F332211&", "box colour is the OutlineColour");
        assert!(boxed[16].parse::<f64>().unwrap() >= 10.0, "padding");
        assert!(
            boxed[3].starts_with("&HFF"),
            "box layer glyphs are invisible"
        );
        let boxes: Vec<_> = dialogues(&doc)
            .into_iter()
            .filter(|d| d.style == BOX_STYLE)
            .collect();
        assert_eq!(boxes.len(), captions(&doc).len());
        assert!(boxes
            .iter()
            .all(|b| b.layer < TEXT_LAYER && plain(&b.text) == "boxed text"));
        // One glyph run: no override block inside the line.
        assert!(boxes.iter().all(|b| b.text.matches('{').count() == 1));

        let default_bg = CaptionStyle {
            background: true,
            background_color: None,
            ..style("none")
        };
        let doc = build_ass(&ws, &default_bg, &opts());
        let outline = style_line(&doc, BOX_STYLE).unwrap()[5];
        assert!(
            outline.ends_with("000000&") && outline != "&H00000000&",
            "semi-transparent black: {outline}"
        );
    }

    #[test]
    fn watermark_only_when_enabled_and_placed_by_position() {
        let ws = words("hello", 0.5);
        let doc = build_ass(&ws, &style("none"), &opts());
        assert!(!doc.contains("clipforge") && style_line(&doc, WATERMARK_STYLE).is_none());

        let cases = [
            ("bottom-left", 1),
            ("bottom-center", 2),
            ("bottom-right", 3),
            ("middle-left", 4),
            ("middle-center", 5),
            ("middle-right", 6),
            ("top-left", 7),
            ("top-center", 8),
            ("top-right", 9),
        ];
        for (position, an) in cases {
            let s = CaptionStyle {
                watermark_enabled: true,
                watermark_position: position.into(),
                watermark_opacity: 0.25,
                ..style("none")
            };
            let doc = build_ass(&ws, &s, &opts());
            let marks: Vec<_> = dialogues(&doc)
                .into_iter()
                .filter(|d| d.style == WATERMARK_STYLE)
                .collect();
            assert_eq!(marks.len(), 1);
            let mark = &marks[0];
            assert!(
                mark.text.starts_with(&format!("{{\\an{an}\\pos(")),
                "{position}: {}",
                mark.text
            );
            assert!(
                mark.text.contains("\\alpha&HBF&"),
                "opacity 0.25 → alpha BF"
            );
            assert!(mark.text.ends_with("}clipforge"));
            assert!(mark.layer > TEXT_LAYER);
            assert_eq!(
                (mark.start.as_str(), mark.end.as_str()),
                ("0:00:00.00", "0:00:30.00")
            );
        }
        let (_, x, y) = watermark_anchor("top-left", 1080.0, 1920.0);
        assert!((x - 43.2).abs() < 1e-9 && (y - 76.8).abs() < 1e-9);
    }

    #[test]
    fn watermark_size_scales_its_font() {
        let size = |pct: f64| {
            let s = CaptionStyle {
                watermark_enabled: true,
                watermark_size: pct,
                ..style("none")
            };
            let doc = build_ass(&words("hi", 0.5), &s, &opts());
            style_line(&doc, WATERMARK_STYLE).unwrap()[2]
                .parse::<f64>()
                .unwrap()
        };
        let (small, large) = (size(10.0), size(40.0));
        assert!((large / small - 4.0).abs() < 0.01, "{small} vs {large}");
        // "clipforge": 9 chars × 0.5 em ≈ 40% of 1080 px.
        assert!((large * 9.0 * WATERMARK_CHAR_WIDTH_EM - 432.0).abs() < 1.0);
    }

    #[test]
    fn text_is_escaped() {
        assert_eq!(escape_text("a{\\b1}b\\Nc\nd"), "a(/b1)b/Nc d");
        let ws = vec![w("{\\fs200}big", 0.0, 0.5), w("line\nbreak", 0.5, 1.0)];
        let doc = build_ass(&ws, &style("none"), &opts());
        assert!(!doc.contains("\\fs200"));
        for e in captions(&doc) {
            assert_eq!(plain(&e.text), "(/fs200)big line break");
        }
        let o = AssOptions {
            font_name: "Evil,Font".into(),
            watermark_text: "{x}".into(),
            ..opts()
        };
        let s = CaptionStyle {
            watermark_enabled: true,
            ..style("none")
        };
        let doc = build_ass(&ws, &s, &o);
        assert_eq!(style_line(&doc, CAPTION_STYLE).unwrap()[1], "EvilFont");
        assert!(doc.contains("}(x)\n"));
    }

    #[test]
    fn times_are_h_mm_ss_cc() {
        assert_eq!(format_time(0), "0:00:00.00");
        assert_eq!(format_time(6_123), "0:01:01.23");
        assert_eq!(format_time(360_000 + 5), "1:00:00.05");
        assert_eq!(to_cs(-1.0), 0);
        assert_eq!(to_cs(f64::NAN), 0);
        assert_eq!(to_cs(1.234), 123);
    }

    #[test]
    fn empty_and_degenerate_words_are_skipped() {
        let ws = vec![w("  ", 0.0, 0.1), w("ok", 0.2, 0.4), w("late", 40.0, 41.0)];
        let events = captions(&build_ass(&ws, &style("none"), &opts()));
        assert_eq!(events.len(), 1, "{events:?}");
        assert_eq!(plain(&events[0].text), "ok");
        assert!(captions(&build_ass(&[], &style("none"), &opts())).is_empty());
    }
}
