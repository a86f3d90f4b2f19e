//! Caption style: every style field of the contract's Caption template, the
//! clamping rules of DESIGN.md and the built-in presets.

use serde::{Deserialize, Serialize};

pub const ANIMATIONS: [&str; 6] = ["none", "fade", "pop", "bounce", "karaoke", "typewriter"];
pub const FONT_SIZE_RANGE: (f64, f64) = (12.0, 200.0);
pub const STROKE_WIDTH_RANGE: (f64, f64) = (0.0, 20.0);
pub const POSITION_Y_RANGE: (f64, f64) = (0.0, 100.0);
pub const WATERMARK_OPACITY_RANGE: (f64, f64) = (0.0, 1.0);
pub const WATERMARK_SIZE_RANGE: (f64, f64) = (1.0, 100.0);

/// The style part of a caption template. Omitted fields take the default's
/// value when deserialised; [`CaptionStyle::clamped`] brings every field into
/// its valid range.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CaptionStyle {
    pub font_family: String,
    /// Pixels on a 1080x1920 frame.
    pub font_size: f64,
    pub font_color: String,
    /// Colour of the word being spoken.
    pub highlight_color: String,
    pub stroke_color: String,
    pub stroke_width: f64,
    pub background: bool,
    pub background_color: Option<String>,
    pub animation: String,
    /// Vertical position of the caption's centre, % of height from the top.
    pub position_y: f64,
    /// CSS font-family list; its first installed family is used when
    /// `font_family` is not installed.
    pub font_stack: String,
    pub watermark_enabled: bool,
    pub watermark_opacity: f64,
    /// "{top|middle|bottom}-{left|center|right}".
    pub watermark_position: String,
    /// % of the frame's width.
    pub watermark_size: f64,
    /// Draw the salient words (numbers, names, rare words; see
    /// `captions::emphasis`) in the highlight colour while they are not
    /// being spoken. Off: only the spoken word is highlighted.
    pub emphasize_keywords: bool,
}

/// [`CaptionStyle`] as stored before `emphasize_keywords` existed (caption
/// templates v1, projects v1–v3): the same fields in the same order. Read,
/// never written; it becomes a style that emphasizes keywords, as every
/// style did then.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CaptionStyleV1 {
    pub font_family: String,
    pub font_size: f64,
    pub font_color: String,
    pub highlight_color: String,
    pub stroke_color: String,
    pub stroke_width: f64,
    pub background: bool,
    pub background_color: Option<String>,
    pub animation: String,
    pub position_y: f64,
    pub font_stack: String,
    pub watermark_enabled: bool,
    pub watermark_opacity: f64,
    pub watermark_position: String,
    pub watermark_size: f64,
}

impl From<CaptionStyleV1> for CaptionStyle {
    fn from(v: CaptionStyleV1) -> Self {
        Self {
            font_family: v.font_family,
            font_size: v.font_size,
            font_color: v.font_color,
            highlight_color: v.highlight_color,
            stroke_color: v.stroke_color,
            stroke_width: v.stroke_width,
            background: v.background,
            background_color: v.background_color,
            animation: v.animation,
            position_y: v.position_y,
            font_stack: v.font_stack,
            watermark_enabled: v.watermark_enabled,
            watermark_opacity: v.watermark_opacity,
            watermark_position: v.watermark_position,
            watermark_size: v.watermark_size,
            emphasize_keywords: true,
        }
    }
}

impl From<&CaptionStyle> for CaptionStyleV1 {
    /// The older layout of `s` (tests write old records with it).
    fn from(s: &CaptionStyle) -> Self {
        let s = s.clone();
        Self {
            font_family: s.font_family,
            font_size: s.font_size,
            font_color: s.font_color,
            highlight_color: s.highlight_color,
            stroke_color: s.stroke_color,
            stroke_width: s.stroke_width,
            background: s.background,
            background_color: s.background_color,
            animation: s.animation,
            position_y: s.position_y,
            font_stack: s.font_stack,
            watermark_enabled: s.watermark_enabled,
            watermark_opacity: s.watermark_opacity,
            watermark_position: s.watermark_position,
            watermark_size: s.watermark_size,
        }
    }
}

impl Default for CaptionStyle {
    fn default() -> Self {
        Self {
            font_family: "Open Sans".into(),
            font_size: 72.0,
            font_color: "#FFFFFF".into(),
            highlight_color: "#FFD700".into(),
            stroke_color: "#000000".into(),
            stroke_width: 4.0,
            background: false,
            background_color: None,
            animation: "pop".into(),
            position_y: 72.0,
            font_stack: "'Open Sans', 'DejaVu Sans', Arial, sans-serif".into(),
            watermark_enabled: false,
            watermark_opacity: 0.6,
            watermark_position: "bottom-right".into(),
            watermark_size: 18.0,
            emphasize_keywords: true,
        }
    }
}

/// Names of the built-in presets, usable wherever a template is named.
pub const PRESETS: [&str; 5] = ["default", "shorts", "karaoke", "minimal", "bold"];

impl CaptionStyle {
    /// A built-in preset by name (case-insensitive).
    pub fn preset(name: &str) -> Option<Self> {
        let base = Self::default();
        let style = match name.trim().to_ascii_lowercase().as_str() {
            "default" => base,
            "shorts" => Self {
                font_size: 80.0,
                highlight_color: "#00E5FF".into(),
                animation: "pop".into(),
                position_y: 70.0,
                ..base
            },
            "karaoke" => Self {
                font_size: 68.0,
                font_color: "#FFFFFF".into(),
                highlight_color: "#FF3B8D".into(),
                animation: "karaoke".into(),
                position_y: 78.0,
                ..base
            },
            "minimal" => Self {
                font_family: "DejaVu Sans".into(),
                font_size: 52.0,
                highlight_color: "#FFFFFF".into(),
                stroke_width: 0.0,
                background: true,
                background_color: Some("#00000099".into()),
                animation: "fade".into(),
                position_y: 85.0,
                ..base
            },
            "bold" => Self {
                font_size: 96.0,
                font_color: "#FFFF00".into(),
                highlight_color: "#FF4500".into(),
                stroke_width: 8.0,
                animation: "bounce".into(),
                position_y: 50.0,
                ..base
            },
            _ => return None,
        };
        Some(style)
    }

    /// Every numeric and enumerated field brought into its valid range;
    /// unknown values fall back to the default template's.
    pub fn clamped(mut self) -> Self {
        let d = Self::default();
        self.font_size = clamp(self.font_size, FONT_SIZE_RANGE, d.font_size);
        self.stroke_width = clamp(self.stroke_width, STROKE_WIDTH_RANGE, d.stroke_width);
        self.position_y = clamp(self.position_y, POSITION_Y_RANGE, d.position_y);
        self.watermark_opacity = clamp(
            self.watermark_opacity,
            WATERMARK_OPACITY_RANGE,
            d.watermark_opacity,
        );
        self.watermark_size = clamp(self.watermark_size, WATERMARK_SIZE_RANGE, d.watermark_size);
        let anim = self.animation.trim().to_ascii_lowercase();
        self.animation = if ANIMATIONS.contains(&anim.as_str()) {
            anim
        } else {
            d.animation
        };
        self.watermark_position =
            normalize_position(&self.watermark_position).unwrap_or(d.watermark_position);
        self.font_color = normalize_color(&self.font_color).unwrap_or(d.font_color);
        self.highlight_color = normalize_color(&self.highlight_color).unwrap_or(d.highlight_color);
        self.stroke_color = normalize_color(&self.stroke_color).unwrap_or(d.stroke_color);
        self.background_color = match self.background_color.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(c) => Some(normalize_color(c).unwrap_or_else(|| "#000000AA".into())),
        };
        if self.font_family.trim().is_empty() {
            self.font_family = d.font_family;
        }
        self.font_family = self.font_family.trim().chars().take(100).collect();
        if self.font_stack.trim().is_empty() {
            self.font_stack = d.font_stack;
        }
        self.font_stack = self.font_stack.trim().chars().take(300).collect();
        self
    }

    /// The font families to try, in order: `font_family`, then the stack.
    pub fn font_candidates(&self) -> Vec<String> {
        let mut out = vec![self.font_family.trim().to_string()];
        for f in self.font_stack.split(',') {
            let f = f.trim().trim_matches(['\'', '"']).trim();
            let generic = matches!(
                f,
                "sans-serif" | "serif" | "monospace" | "cursive" | "fantasy" | "system-ui"
            );
            if !f.is_empty() && !generic && !out.iter().any(|o| o.eq_ignore_ascii_case(f)) {
                out.push(f.to_string());
            }
        }
        out
    }

    /// Parses a template given as JSON; omitted fields inherit the default,
    /// then the result is clamped.
    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str::<Self>(text).map(Self::clamped)
    }
}

fn clamp(v: f64, (lo, hi): (f64, f64), fallback: f64) -> f64 {
    if v.is_finite() {
        v.clamp(lo, hi)
    } else {
        fallback
    }
}

/// "#RGB", "#RRGGBB" or "#RRGGBBAA" (with or without '#') → "#RRGGBB[AA]" upper-case.
pub fn normalize_color(c: &str) -> Option<String> {
    let hex = c.trim().trim_start_matches('#');
    if !hex.chars().all(|ch| ch.is_ascii_hexdigit()) {
        return None;
    }
    let full = match hex.len() {
        3 => hex.chars().flat_map(|ch| [ch, ch]).collect::<String>(),
        6 | 8 => hex.to_string(),
        _ => return None,
    };
    Some(format!("#{}", full.to_ascii_uppercase()))
}

/// Parses "#RRGGBB[AA]" into (r, g, b, alpha 0..=255 where 255 is opaque).
pub fn parse_color(c: &str) -> Option<(u8, u8, u8, u8)> {
    let n = normalize_color(c)?;
    let byte = |i: usize| u8::from_str_radix(&n[1 + 2 * i..3 + 2 * i], 16).ok();
    let a = if n.len() == 9 { byte(3)? } else { 255 };
    Some((byte(0)?, byte(1)?, byte(2)?, a))
}

fn normalize_position(p: &str) -> Option<String> {
    let p = p.trim().to_ascii_lowercase();
    let (v, h) = p.split_once('-')?;
    let v = match v {
        "top" | "middle" | "bottom" => v,
        "center" => "middle",
        _ => return None,
    };
    let h = match h {
        "left" | "center" | "right" => h,
        "middle" => "center",
        _ => return None,
    };
    Some(format!("{v}-{h}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn omitted_fields_inherit_and_values_are_clamped() {
        let s = CaptionStyle::from_json(
            r#"{"fontSize": 900, "animation": "spin", "fontColor": "f00",
            "watermarkPosition": "Top-Left", "watermarkOpacity": -3, "positionY": 30}"#,
        )
        .unwrap();
        assert_eq!(s.font_size, 200.0);
        assert_eq!(s.animation, "pop");
        assert_eq!(s.font_color, "#FF0000");
        assert_eq!(s.watermark_position, "top-left");
        assert_eq!(s.watermark_opacity, 0.0);
        assert_eq!(s.position_y, 30.0);
        assert_eq!(s.stroke_color, CaptionStyle::default().stroke_color);
        assert!(s.emphasize_keywords, "omitted: on");
        let off = CaptionStyle::from_json(r#"{"emphasizeKeywords": false}"#).unwrap();
        assert!(!off.emphasize_keywords);
    }

    #[test]
    fn presets_exist_and_are_valid() {
        for p in PRESETS {
            let s = CaptionStyle::preset(p).unwrap();
            assert_eq!(s.clone().clamped(), s, "preset {p} is not in range");
        }
        assert!(CaptionStyle::preset("nope").is_none());
    }

    #[test]
    fn colors_parse() {
        assert_eq!(parse_color("#11223380"), Some((0x11, 0x22, 0x33, 0x80)));
        assert_eq!(parse_color("#abc"), Some((0xAA, 0xBB, 0xCC, 255)));
        assert_eq!(parse_color("red"), None);
    }

    #[test]
    fn font_candidates_skip_generics() {
        let s = CaptionStyle {
            font_family: "Inter".into(),
            font_stack: "Inter, 'DejaVu Sans', sans-serif".into(),
            ..Default::default()
        };
        assert_eq!(s.font_candidates(), ["Inter", "DejaVu Sans"]);
    }
}
