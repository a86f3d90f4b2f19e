//! The timeline every export format writes ([`Timeline`]): the source, the
//! clips back to back with their captions, snapped to the source's frames.

use serde::{Deserialize, Serialize};

/// The source video every clip is cut from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceInfo {
    /// What the user knows it by: the upload's file name or the URL.
    pub name: String,
    /// Where an editor finds it: a `file://` URL for a local file, else the
    /// source URL (the editor relinks to its own copy).
    pub url: String,
    pub duration: f64,
    pub fps: f64,
    pub width: u32,
    pub height: u32,
}

/// One caption line, in seconds on the clip's own timeline.
#[derive(Clone, Debug, PartialEq)]
pub struct CaptionLine {
    pub start: f64,
    pub end: f64,
    pub text: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ExportClip {
    /// 1-based, as in the clip file names.
    pub index: u32,
    pub title: String,
    /// In and out in the source, seconds.
    pub start: f64,
    pub end: f64,
    pub captions: Vec<CaptionLine>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Timeline {
    pub name: String,
    /// ISO code of the captions' language ("en" when unknown).
    pub language: String,
    pub source: SourceInfo,
    pub clips: Vec<ExportClip>,
}

/// A frame rate as a fraction (`30000/1001` for 29.97).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameRate {
    pub num: u64,
    pub den: u64,
}

impl FrameRate {
    /// The editing rate for a measured `fps`: NTSC rates (23.976, 29.97,
    /// 59.94) become their exact x/1001 fractions, others the nearest whole
    /// number; an unknown rate is 30.
    pub fn of(fps: f64) -> FrameRate {
        if !fps.is_finite() || fps < 1.0 {
            return FrameRate { num: 30, den: 1 };
        }
        for ntsc in [24_000u64, 30_000, 60_000] {
            let rate = ntsc as f64 / 1001.0;
            if (fps - rate).abs() < 0.01 {
                return FrameRate {
                    num: ntsc,
                    den: 1001,
                };
            }
        }
        FrameRate {
            num: fps.round().max(1.0) as u64,
            den: 1,
        }
    }

    /// Frames per second of timecode (30 for 29.97).
    pub fn timebase(self) -> u64 {
        (self.num as f64 / self.den as f64).round() as u64
    }

    /// The frame nearest to `secs`.
    pub fn frames(self, secs: f64) -> u64 {
        (secs.max(0.0) * self.num as f64 / self.den as f64).round() as u64
    }

    pub fn is_ntsc(self) -> bool {
        self.den == 1001
    }
}

/// A clip snapped to frames: where it sits in the source and on the timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Placed {
    pub source_in: u64,
    pub source_out: u64,
    pub record_in: u64,
}

impl Placed {
    pub fn len(self) -> u64 {
        self.source_out - self.source_in
    }
}

impl Timeline {
    pub fn rate(&self) -> FrameRate {
        FrameRate::of(self.source.fps)
    }

    /// Every clip snapped to whole frames (at least one frame long, inside the
    /// source), placed back to back from the timeline's start.
    pub(crate) fn placed(&self) -> Vec<(&ExportClip, Placed)> {
        let rate = self.rate();
        let last = rate.frames(self.source.duration).max(1);
        let mut at = 0;
        self.clips
            .iter()
            .map(|c| {
                let source_in = rate.frames(c.start).min(last - 1);
                let source_out = rate.frames(c.end).clamp(source_in + 1, last);
                let p = Placed {
                    source_in,
                    source_out,
                    record_in: at,
                };
                at += p.len();
                (c, p)
            })
            .collect()
    }

    /// Caption lines of a placed clip, in source frames, clipped to the clip.
    pub(crate) fn caption_frames(&self, c: &ExportClip, p: Placed) -> Vec<(u64, u64, String)> {
        let rate = self.rate();
        c.captions
            .iter()
            .filter_map(|l| {
                let text = one_line(&l.text);
                let start = (p.source_in + rate.frames(l.start)).min(p.source_out);
                let end = (p.source_in + rate.frames(l.end)).min(p.source_out);
                (end > start && !text.is_empty()).then_some((start, end, text))
            })
            .collect()
    }

    /// Frames of the whole timeline.
    pub(crate) fn total_frames(&self) -> u64 {
        self.placed().iter().map(|(_, p)| p.len()).sum()
    }
}

/// Text on one line with single spaces (titles and captions end up in
/// line-based formats).
pub(crate) fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
