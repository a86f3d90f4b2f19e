//! Where the watermark goes and how large it is, as a share of the frame.

use super::ass_format::escape_text;
use super::ass_lines::text_units;
use crate::captions::template::CaptionStyle;

/// Estimated glyph width of the watermark in ems, calibrated on lower-case
/// bold text so its rendered width comes close to the requested share of
/// the frame.
pub(super) const WATERMARK_CHAR_WIDTH_EM: f64 = 0.5;
/// Watermark margin from the frame edges, share of width/height.
const WATERMARK_MARGIN: f64 = 0.04;

/// Font size that makes `text` about the style's `watermark_size` % of
/// the `width`x`height` frame's width.
pub(super) fn watermark_font_size(
    style: &CaptionStyle,
    text: &str,
    width: f64,
    height: f64,
) -> f64 {
    let share = if style.watermark_size.is_finite() {
        style.watermark_size.clamp(1.0, 100.0)
    } else {
        18.0
    };
    let units = text_units(escape_text(text.trim()).trim()).max(1.0);
    (width * share / 100.0 / (units * WATERMARK_CHAR_WIDTH_EM)).clamp(4.0, height / 4.0)
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
