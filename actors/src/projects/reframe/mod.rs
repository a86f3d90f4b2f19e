//! Reframing a clip into the output frame: which layout (one face followed,
//! two faces stacked, the active speaker, a screen recording with the face
//! as an inset, or the whole frame over a blurred copy of itself), in which
//! aspect ratio, and the ffmpeg filter graph that draws it.
//!
//! `auto` decides per clip from the face tracks ([`tracks`]) and, for two
//! people, from who is talking ([`speaker`]); see [`decide`] for the rule.

use std::path::Path;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

pub mod graph;
pub mod keepout;
pub mod manual;
pub mod seen;
pub mod speaker;
pub mod tracks;

use crate::media::face;
use crate::media::spare_cpu::SpareCpu;
use crate::projects::stages::StageError;
use graph::Composition;
use tracks::Track;

/// How the picture is laid out in the output frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Layout {
    /// Chosen per clip by [`decide`].
    #[default]
    Auto,
    /// Follow one face (a centre crop when there is none).
    Single,
    /// Two faces, each in its own half (stacked for a vertical output).
    Split,
    /// Follow whichever of two faces is talking.
    Speaker,
    /// The whole frame scaled to fit, with the speaker's face as an inset.
    Screen,
    /// The whole frame scaled to fit over a blurred, filled copy of itself.
    Fit,
}

impl Layout {
    pub const NAMES: [&'static str; 6] = ["auto", "single", "split", "speaker", "screen", "fit"];

    pub fn as_str(self) -> &'static str {
        match self {
            Layout::Auto => "auto",
            Layout::Single => "single",
            Layout::Split => "split",
            Layout::Speaker => "speaker",
            Layout::Screen => "screen",
            Layout::Fit => "fit",
        }
    }
}

impl std::fmt::Display for Layout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A layout or aspect ratio name that is not one of [`Layout::NAMES`] /
/// [`AspectRatio::NAMES`].
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    #[error("unknown layout {0:?} (use {names})", names = Layout::NAMES.join(", "))]
    Layout(String),
    #[error("unknown aspect ratio {0:?} (use {names})", names = AspectRatio::NAMES.join(", "))]
    AspectRatio(String),
}

impl std::str::FromStr for Layout {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Self, ParseError> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(Layout::Auto),
            "single" => Ok(Layout::Single),
            "split" => Ok(Layout::Split),
            "speaker" => Ok(Layout::Speaker),
            "screen" => Ok(Layout::Screen),
            "fit" => Ok(Layout::Fit),
            other => Err(ParseError::Layout(other.to_string())),
        }
    }
}

/// The output frame's shape.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum AspectRatio {
    /// 1080x1920.
    #[default]
    Vertical,
    /// 1080x1080.
    Square,
    /// 1080x1350.
    Portrait,
    /// 1920x1080.
    Wide,
}

impl AspectRatio {
    pub const NAMES: [&'static str; 4] = ["9:16", "1:1", "4:5", "16:9"];

    pub fn as_str(self) -> &'static str {
        match self {
            AspectRatio::Vertical => "9:16",
            AspectRatio::Square => "1:1",
            AspectRatio::Portrait => "4:5",
            AspectRatio::Wide => "16:9",
        }
    }

    /// Output size in pixels (the short side is 1080).
    pub fn size(self) -> (u32, u32) {
        match self {
            AspectRatio::Vertical => (1080, 1920),
            AspectRatio::Square => (1080, 1080),
            AspectRatio::Portrait => (1080, 1350),
            AspectRatio::Wide => (1920, 1080),
        }
    }
}

impl std::fmt::Display for AspectRatio {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for AspectRatio {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Self, ParseError> {
        match s.trim() {
            "9:16" => Ok(AspectRatio::Vertical),
            "1:1" => Ok(AspectRatio::Square),
            "4:5" => Ok(AspectRatio::Portrait),
            "16:9" => Ok(AspectRatio::Wide),
            other => Err(ParseError::AspectRatio(other.to_string())),
        }
    }
}

/// A track counts as someone on screen when it is in this share of samples.
pub const STABLE_PRESENCE: f64 = 0.4;
/// A face narrower than this share of the frame width is "small".
pub const SMALL_FACE: f64 = 0.12;
/// A second face at least this share of the first's size is a second person
/// (smaller ones are background faces).
pub const PEER_SIZE: f64 = 0.5;
/// The speaker layout needs the talker identified in this share of the
/// voiced moments; otherwise both people stay visible (split).
pub const SPEAKER_CONFIDENCE: f64 = 0.5;

/// What [`decide`] chose, and why (logged and shown per clip).
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    pub layout: Layout,
    pub reason: String,
}

/// The `auto` rule, from the clip's stable face tracks (most present first)
/// and, when there are two people, the share of voiced moments in which the
/// active-speaker analysis could tell who talks:
///
/// 1. a source already (within 5 %) of the output's shape → fit;
/// 2. no face → fit (nothing to follow; everything stays visible);
/// 3. one face, small (< 12 % of the width) and off-centre (in the outer
///    quarter of the width) → screen (a screen recording or slide with a
///    face cam);
/// 4. one face, or a second one much smaller than the first → single;
/// 5. two faces of similar size → speaker when the talker is identified in
///    ≥ 50 % of voiced moments, else split;
/// 6. three or more faces of similar size → fit (a group: nobody is cut).
pub fn decide(
    tracks: &[Track],
    speaker_confidence: Option<f64>,
    src_aspect: f64,
    out_aspect: f64,
) -> Decision {
    let pick = |layout, reason: String| Decision { layout, reason };
    if (src_aspect / out_aspect - 1.0).abs() <= 0.05 {
        return pick(
            Layout::Fit,
            format!("the source ({src_aspect:.2}:1) already has the output's shape"),
        );
    }
    let Some(first) = tracks.first() else {
        return pick(Layout::Fit, "no face in the clip".into());
    };
    let peers: Vec<&Track> = tracks
        .iter()
        .filter(|t| t.size >= first.size * PEER_SIZE)
        .collect();
    match peers.len() {
        0 | 1 => {
            if first.size < SMALL_FACE && (first.cx - 0.5).abs() > 0.25 {
                pick(
                    Layout::Screen,
                    format!(
                        "one small face ({:.0} % of the width) at the side: screen content with a face cam",
                        first.size * 100.0
                    ),
                )
            } else {
                pick(
                    Layout::Single,
                    format!("one face ({:.0} % of samples)", first.presence * 100.0),
                )
            }
        }
        2 => match speaker_confidence {
            Some(c) if c >= SPEAKER_CONFIDENCE => pick(
                Layout::Speaker,
                format!(
                    "two faces; the talker is identified in {:.0} % of voiced moments",
                    c * 100.0
                ),
            ),
            c => pick(
                Layout::Split,
                format!(
                    "two faces; the talker is identified in only {:.0} % of voiced moments",
                    c.unwrap_or(0.0) * 100.0
                ),
            ),
        },
        n => pick(Layout::Fit, format!("{n} faces: a group stays whole")),
    }
}

/// How one clip is framed: the layout used (never `auto`), why, and the
/// crop boxes and paths that draw it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Framing {
    pub layout: Layout,
    pub reason: String,
    pub composition: Composition,
    /// Every face seen, as drawn in the output frame (px): where captions
    /// must not go ([`keepout`]).
    #[serde(default)]
    pub faces: Vec<keepout::OutBox>,
    /// What the face analysis saw (framings made before it was kept:
    /// `None`), for listing the faces and reframing by hand.
    #[serde(default)]
    pub seen: Option<seen::SeenFaces>,
}

/// The two most present faces when the second is a peer of the first.
fn peer_pair(tracks: &[Track]) -> Option<[&Track; 2]> {
    match tracks {
        [a, b, ..] if b.size >= a.size * PEER_SIZE => Some([a, b]),
        _ => None,
    }
}

/// Frames the clip `[start, start + duration)` of `input` (a `src` frame)
/// into `out` with the `requested` layout (`auto`: [`decide`]). A forced
/// layout that needs faces the clip does not have falls back: speaker with
/// fewer than two faces follows one (single); split without two faces
/// shows the source's left and right halves; screen without a face has no
/// inset; single without a face is a centre crop. With `spare`, the face
/// decode and search run on spare CPU only (until it is raised).
#[allow(clippy::too_many_arguments)]
pub async fn frame_clip(
    input: &Path,
    start: f64,
    duration: f64,
    src: (u32, u32),
    out: (u32, u32),
    requested: Layout,
    cancel: &CancellationToken,
    spare: Option<&SpareCpu>,
) -> Result<Framing, StageError> {
    // Who talks (auto, speaker) needs the mouth motion and the sound's
    // balance, measured at once; the other layouts, and a source already
    // of the output's shape, need only where the faces are (the captions
    // must still miss them).
    let talk = match requested {
        Layout::Speaker => true,
        Layout::Auto => !same_shape(src, out),
        _ => false,
    };
    let (analysis, energy) = if talk {
        let (analysis, energy) = tokio::try_join!(
            face::track_with(input, start, duration, src, true, cancel, spare),
            speaker::stereo_energy(input, start, duration, cancel),
        )?;
        (analysis, Some(energy))
    } else {
        (
            face::track_with(input, start, duration, src, false, cancel, spare).await?,
            None,
        )
    };
    let tracks = tracks::build(&analysis, STABLE_PRESENCE);
    let timeline = match (peer_pair(&tracks), &energy) {
        (Some(p), Some(energy)) => Some(speaker::timeline(p, &analysis, energy)),
        _ => None,
    };
    Ok(compose(
        &analysis,
        &tracks,
        timeline.as_ref(),
        src,
        out,
        requested,
    ))
}

/// The framing of a range from faces seen before (`seen`, over a longer
/// range starting `offset` s before this one), without decoding anything:
/// for every layout but those that need to know who talks — `speaker`, and
/// `auto` with two people of similar size (`None` then).
pub fn frame_from_seen(
    seen: &seen::SeenFaces,
    offset: f64,
    duration: f64,
    out: (u32, u32),
    requested: Layout,
) -> Option<Framing> {
    let src = (seen.width, seen.height);
    let analysis = seen.slice(offset, duration)?;
    let tracks = tracks::build(&analysis, STABLE_PRESENCE);
    let needs_talker = match requested {
        Layout::Speaker => true,
        Layout::Auto => !same_shape(src, out) && peer_pair(&tracks).is_some(),
        _ => false,
    };
    (!needs_talker).then(|| compose(&analysis, &tracks, None, src, out, requested))
}

/// True when the source already has (within 5 %) the output's shape.
fn same_shape(src: (u32, u32), out: (u32, u32)) -> bool {
    let src_aspect = src.0 as f64 / src.1.max(1) as f64;
    let out_aspect = out.0 as f64 / out.1.max(1) as f64;
    (src_aspect / out_aspect - 1.0).abs() <= 0.05
}

/// The layout chosen (or forced) and drawn from a face analysis, its
/// stable tracks and, for two people, who talks when.
fn compose(
    analysis: &face::FaceAnalysis,
    tracks: &[Track],
    timeline: Option<&speaker::SpeakerTimeline>,
    src: (u32, u32),
    out: (u32, u32),
    requested: Layout,
) -> Framing {
    let src_aspect = src.0 as f64 / src.1.max(1) as f64;
    let out_aspect = out.0 as f64 / out.1.max(1) as f64;
    let fit = |reason: String| Framing {
        layout: Layout::Fit,
        reason,
        composition: Composition::Fit { inset: None },
        faces: Vec::new(),
        seen: None,
    };
    let pair = peer_pair(tracks);
    let decision = match requested {
        Layout::Fit => Decision {
            layout: Layout::Fit,
            reason: "forced".into(),
        },
        Layout::Auto if same_shape(src, out) => decide(&[], None, src_aspect, out_aspect),
        Layout::Auto => decide(
            tracks,
            timeline.map(|t| t.confidence),
            src_aspect,
            out_aspect,
        ),
        forced => Decision {
            layout: forced,
            reason: "forced".into(),
        },
    };
    let single = |reason: String| {
        let samples = subject_by_shot(tracks, analysis);
        let composition = graph::follow_face(&samples, &analysis.cuts, src, out);
        let reason = match &composition {
            Composition::Follow { fit, .. } if !fit.is_empty() => {
                format!("{reason}; {} shot(s) without a face fitted", fit.len())
            }
            _ => reason,
        };
        Framing {
            layout: Layout::Single,
            reason,
            composition,
            faces: Vec::new(),
            seen: None,
        }
    };
    let mut framing = match decision.layout {
        Layout::Speaker => match (pair, timeline) {
            (Some(p), Some(tl)) => Framing {
                layout: Layout::Speaker,
                reason: format!("{}; {} switch(es)", decision.reason, tl.switches),
                composition: graph::follow_speaker(p, tl, &analysis.cuts, src, out),
                faces: Vec::new(),
                seen: None,
            },
            _ => single(format!(
                "{}, but two people of similar size are not on screen together for long: following the one in each shot",
                decision.reason
            )),
        },
        Layout::Split => Framing {
            layout: Layout::Split,
            reason: if pair.is_some() {
                decision.reason
            } else {
                format!(
                    "{}, without two faces: the left and right halves",
                    decision.reason
                )
            },
            composition: graph::split(pair, analysis.seam, src, out),
            faces: Vec::new(),
            seen: None,
        },
        // The face cam: the smallest stable face (a presenter's inset).
        Layout::Screen => Framing {
            layout: Layout::Screen,
            composition: graph::screen(tracks.iter().min_by(|a, b| a.size.total_cmp(&b.size)), src),
            reason: decision.reason,
            faces: Vec::new(),
            seen: None,
        },
        Layout::Fit => fit(decision.reason),
        Layout::Single | Layout::Auto => single(decision.reason),
    };
    framing.faces = keepout::face_boxes(analysis, &framing.composition, src, out);
    framing.seen = Some(seen::SeenFaces::of(analysis));
    framing
}

/// The face followed in each sample: in each shot, the first subject (most
/// present first) seen in at least [`STABLE_PRESENCE`] of that shot's
/// samples; `None` in shots without one (a face glimpsed once in a wide
/// shot is no subject to crop to: the shot is fitted).
fn subject_by_shot(tracks: &[Track], analysis: &face::FaceAnalysis) -> face::FaceSamples {
    let n = analysis.faces.len();
    let mut out = vec![None; n];
    for range in face::shot_ranges(n, &analysis.cuts) {
        let Some(t) = tracks.iter().find(|t| {
            let seen = t.positions[range.clone()]
                .iter()
                .filter(|p| p.is_some())
                .count();
            seen > 0 && seen as f64 >= STABLE_PRESENCE * range.len() as f64
        }) else {
            continue;
        };
        for i in range {
            out[i] = t.positions[i].map(|(_, f)| f);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    use tracks::still as track;

    #[test]
    fn names_round_trip() {
        for n in Layout::NAMES {
            assert_eq!(n.parse::<Layout>().unwrap().as_str(), n);
        }
        for n in AspectRatio::NAMES {
            assert_eq!(n.parse::<AspectRatio>().unwrap().as_str(), n);
        }
        assert!("3:2".parse::<AspectRatio>().is_err());
        assert!("pip".parse::<Layout>().is_err());
        assert_eq!(AspectRatio::Portrait.size(), (1080, 1350));
    }

    #[test]
    fn the_auto_rule() {
        let wide = 16.0 / 9.0;
        let out = 9.0 / 16.0;
        let d = |t: &[Track], c| decide(t, c, wide, out).layout;
        assert_eq!(d(&[], None), Layout::Fit);
        assert_eq!(d(&[track(0.5, 0.2)], None), Layout::Single);
        assert_eq!(d(&[track(0.9, 0.06)], None), Layout::Screen);
        assert_eq!(d(&[track(0.5, 0.06)], None), Layout::Single);
        assert_eq!(
            d(&[track(0.3, 0.2), track(0.7, 0.05)], None),
            Layout::Single
        );
        let two = [track(0.3, 0.2), track(0.7, 0.18)];
        assert_eq!(d(&two, Some(0.8)), Layout::Speaker);
        assert_eq!(d(&two, Some(0.2)), Layout::Split);
        assert_eq!(d(&two, None), Layout::Split);
        let three = [track(0.2, 0.2), track(0.5, 0.2), track(0.8, 0.2)];
        assert_eq!(d(&three, None), Layout::Fit);
        assert_eq!(
            decide(&[track(0.5, 0.2)], None, out, out).layout,
            Layout::Fit
        );
    }
}
