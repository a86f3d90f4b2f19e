//! ASS documents for libass (ffmpeg's `ass` filter): word-by-word animated
//! captions in a caption template's style, plus the optional watermark.
//!
//! Times are handled in centiseconds (the resolution of ASS) so consecutive
//! events of a line meet exactly and never flicker.

use std::fmt::Write as _;
use std::ops::Range;

use super::ass_format::{alpha_value, num, push_dialogue, style_field, to_cs, StyleLine};
pub use super::ass_format::{escape_text, format_time, Animation, AssColor};
use super::ass_lines::{
    karaoke_words, line_text, text_units, timed_lines, TimedLine, CHAR_WIDTH_EM,
};
use super::emphasis::emphasis_tags;
use super::split_unspaced_words;
pub use super::watermark::watermark_anchor;
use super::watermark::watermark_font_size;
#[cfg(test)]
use super::watermark::WATERMARK_CHAR_WIDTH_EM;
use crate::captions::template::CaptionStyle;
use crate::script::{separator, unspaced_word};
use crate::transcript::{ends_sentence, Word};

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

/// Groups words into caption lines; see [`MAX_WORDS_PER_LINE`],
/// [`MAX_LINE_WIDTH_SHARE`] and [`LINE_BREAK_PAUSE`]. A line also ends after
/// sentence punctuation. A word is never split: one too wide for the frame
/// is a line of its own (words written without spaces are first cut between
/// characters by [`build_ass`], see [`split_unspaced_words`]). The ranges
/// cover `words` in order, without gaps.
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
        let gap = separator(prev.text.trim(), word.text.trim());
        let joined = units + text_units(gap) + word_units;
        // Words written without spaces (CJK, Thai) are pieces of a running
        // text: only the width limits their line.
        let counted = words[first..=i]
            .iter()
            .filter(|w| !unspaced_word(w.text.trim()))
            .count();
        let full =
            counted > MAX_WORDS_PER_LINE || frame.text_width(joined) > frame.max_line_width();
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
    // A wide character is about one em: this many fit on a line.
    let max_chars = (frame.max_line_width() / frame.font_px).floor().max(1.0) as usize;
    let words = &split_unspaced_words(words, max_chars);
    let lines = timed_lines(words, &group_words(words, style, opts), limit);
    let renderer = Renderer {
        animation: Animation::parse(&style.animation),
        colors: Colors::new(style),
        emphasize_keywords: style.emphasize_keywords,
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

/// The height (px) one caption line takes on a `width`x`height` frame:
/// the font with room for its outline, its box and a word popping larger.
pub fn line_band(style: &CaptionStyle, width: u32, height: u32) -> f64 {
    let frame = Frame::new(
        style,
        &AssOptions {
            width,
            height,
            font_name: String::new(),
            watermark_text: String::new(),
            duration: 0.0,
        },
    );
    frame.font_px * 1.6 + 2.0 * (frame.font_px * 0.2).max(MIN_BOX_PADDING * frame.scale)
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
        // Template sizes are for 1080x1920; other frames (1:1, 4:5, 16:9)
        // scale them by the frame's area, so a caption covers about the
        // same share of the picture in every aspect ratio.
        let scale = (width * height / (REFERENCE_WIDTH * REFERENCE_HEIGHT)).sqrt();
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
    /// The template's `emphasize_keywords`.
    emphasize_keywords: bool,
    /// Centre of the caption lines.
    x: f64,
    y: f64,
}

impl Renderer {
    /// A smaller font size when a line (a single over-long word) would not fit.
    fn fit_font_size(&self, line: &TimedLine) -> Option<f64> {
        let units = text_units(&line_text(line));
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
        let emphasis = emphasis_tags(
            self.colors.font,
            self.colors.highlight,
            self.animation == Animation::Karaoke,
        )
        .filter(|_| self.emphasize_keywords);
        let Some(current) = event.current else {
            karaoke_words(&mut out, line, emphasis.as_ref());
            return out;
        };
        let (open, close) = self.current_word_tags();
        let last = line.words.len() - 1;
        for (j, word) in line.words.iter().enumerate() {
            if j > 0 {
                out.push_str(separator(&line.words[j - 1].text, &word.text));
            }
            if j != current {
                // Typewriter hides the words after the current one.
                let shown = self.animation != Animation::Typewriter || j < current;
                match emphasis.as_ref().filter(|_| word.salient && shown) {
                    Some((on, off)) => _ = write!(out, "{{{on}}}{}{{{off}}}", word.text),
                    None => out.push_str(&word.text),
                }
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
                out.push_str(separator(&line.words[j - 1].text, &word.text));
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
            let size = watermark_font_size(style, &opts.watermark_text, frame.width, frame.height);
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

#[cfg(test)]
#[path = "ass_tests.rs"]
mod tests;
