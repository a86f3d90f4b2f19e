//! What a framing's face analysis saw, kept with the framing ([`SeenFaces`]).

use serde::{Deserialize, Serialize};

use crate::media::face::{Face, FaceAnalysis, SAMPLE_FPS};

/// What the face analysis of a framing saw (not the mouth motion): kept
/// with the framing, so its faces can be listed and a hand-set crop drawn
/// without analysing the clip again.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SeenFaces {
    /// Every face of each sample (1/SAMPLE_FPS s apart from the framed
    /// range's start), largest first.
    pub faces: Vec<Vec<Face>>,
    /// Shot changes, seconds from the range's start.
    pub cuts: Vec<f64>,
    pub width: u32,
    pub height: u32,
    /// Where a split-screen source divides its panels (share of the width).
    #[serde(default)]
    pub seam: Option<f64>,
}

impl SeenFaces {
    pub fn of(a: &FaceAnalysis) -> Self {
        Self {
            faces: a.faces.clone(),
            cuts: a.cuts.clone(),
            width: a.width,
            height: a.height,
            seam: a.seam,
        }
    }

    pub fn analysis(&self) -> FaceAnalysis {
        FaceAnalysis {
            faces: self.faces.clone(),
            cuts: self.cuts.clone(),
            width: self.width,
            height: self.height,
            seam: self.seam,
            ..FaceAnalysis::default()
        }
    }

    /// What was seen over `[offset, offset + duration)` of the analysed
    /// range (seconds from its start), as an analysis of that range alone
    /// (samples from the one nearest `offset`; shot changes moved with
    /// it). `None` when no sample falls in it.
    pub fn slice(&self, offset: f64, duration: f64) -> Option<FaceAnalysis> {
        if !(offset.is_finite() && duration.is_finite()) || offset < 0.0 || duration <= 0.0 {
            return None;
        }
        let first = (offset * SAMPLE_FPS).round() as usize;
        let count = ((duration * SAMPLE_FPS - 1e-9).ceil() as usize).max(1);
        let last = (first + count).min(self.faces.len());
        if first >= last {
            return None;
        }
        Some(FaceAnalysis {
            faces: self.faces[first..last].to_vec(),
            cuts: self
                .cuts
                .iter()
                .map(|c| c - offset)
                .filter(|c| *c > 0.0 && *c < duration)
                .collect(),
            width: self.width,
            height: self.height,
            seam: self.seam,
            ..FaceAnalysis::default()
        })
    }

    /// The shots as (from, to) seconds from the range's start.
    pub fn shots(&self) -> Vec<(f64, f64)> {
        let n = self.faces.len();
        let end = n as f64 / SAMPLE_FPS;
        let mut bounds = vec![0.0];
        bounds.extend(self.cuts.iter().copied().filter(|c| *c > 0.0 && *c < end));
        bounds.push(end);
        bounds.windows(2).map(|w| (w[0], w[1])).collect()
    }
}
