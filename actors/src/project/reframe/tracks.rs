//! Face tracks: the faces of consecutive samples linked into one track per
//! person (nearest previous position, greedy, largest faces first).

use crate::media::face::{Face, FaceAnalysis};

/// A face is linked to a track when its centre moved less than this (share
/// of the frame) per sample since the track was last seen (a face missed
/// by the detector for a sample or two keeps its track), up to 3 samples.
const LINK_DISTANCE: f64 = 0.15;

/// One person over the clip.
#[derive(Clone, Debug, PartialEq)]
pub struct Track {
    /// Mean centre and size over the samples it is in.
    pub cx: f64,
    pub cy: f64,
    pub size: f64,
    /// Share of the samples it is in.
    pub presence: f64,
    /// Per sample: the face's index in `FaceAnalysis::faces[sample]` and
    /// the face, when the track is in that sample.
    pub positions: Vec<Option<(usize, Face)>>,
}

impl Track {
    /// The track's position in every sample: gaps take the nearest known
    /// one (the track's mean when it has none).
    pub fn filled(&self) -> Vec<Face> {
        let known: Vec<(usize, Face)> = self
            .positions
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.map(|(_, f)| (i, f)))
            .collect();
        let mean = Face {
            cx: self.cx,
            cy: self.cy,
            size: self.size,
        };
        (0..self.positions.len())
            .map(|i| {
                known
                    .iter()
                    .min_by_key(|(j, _)| (*j as i64 - i as i64).unsigned_abs())
                    .map(|(_, f)| *f)
                    .unwrap_or(mean)
            })
            .collect()
    }

    /// The face's index in `FaceAnalysis::faces[sample]`, if present there.
    pub fn index_in(&self, sample: usize) -> Option<usize> {
        self.positions
            .get(sample)
            .copied()
            .flatten()
            .map(|(i, _)| i)
    }
}

/// Every track present in at least `min_presence` of the samples, most
/// present (then largest) first.
pub fn build(analysis: &FaceAnalysis, min_presence: f64) -> Vec<Track> {
    let n = analysis.faces.len();
    let mut tracks: Vec<Track> = Vec::new();
    // Last known position of each track, and the sample it was seen in.
    let mut last: Vec<(usize, Face)> = Vec::new();
    for (s, faces) in analysis.faces.iter().enumerate() {
        let mut taken = vec![false; tracks.len()];
        for (i, f) in faces.iter().enumerate() {
            let nearest = last
                .iter()
                .enumerate()
                .filter(|(t, _)| !taken[*t])
                .map(|(t, (seen, l))| {
                    let d = ((l.cx - f.cx).powi(2) + (l.cy - f.cy).powi(2)).sqrt();
                    (t, d / (s - seen).clamp(1, 3) as f64)
                })
                .filter(|(_, d)| *d < LINK_DISTANCE)
                .min_by(|a, b| a.1.total_cmp(&b.1));
            let t = match nearest {
                Some((t, _)) => t,
                None => {
                    tracks.push(Track {
                        cx: 0.0,
                        cy: 0.0,
                        size: 0.0,
                        presence: 0.0,
                        positions: vec![None; n],
                    });
                    last.push((s, *f));
                    taken.push(false);
                    tracks.len() - 1
                }
            };
            taken[t] = true;
            last[t] = (s, *f);
            tracks[t].positions[s] = Some((i, *f));
        }
    }
    for t in &mut tracks {
        let seen: Vec<Face> = t.positions.iter().flatten().map(|(_, f)| *f).collect();
        let k = seen.len().max(1) as f64;
        t.cx = seen.iter().map(|f| f.cx).sum::<f64>() / k;
        t.cy = seen.iter().map(|f| f.cy).sum::<f64>() / k;
        t.size = seen.iter().map(|f| f.size).sum::<f64>() / k;
        t.presence = seen.len() as f64 / n.max(1) as f64;
    }
    tracks.retain(|t| t.presence >= min_presence);
    tracks.sort_by(|a, b| {
        (b.presence * b.size)
            .total_cmp(&(a.presence * a.size))
            .then(a.cx.total_cmp(&b.cx))
    });
    tracks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn face(cx: f64, size: f64) -> Face {
        Face { cx, cy: 0.4, size }
    }

    #[test]
    fn two_people_make_two_tracks_and_a_flash_is_dropped() {
        let mut faces = Vec::new();
        for i in 0..10 {
            let mut s = vec![face(0.25 + i as f64 * 0.005, 0.2), face(0.75, 0.18)];
            if i == 4 {
                s.push(face(0.5, 0.05));
            }
            if i == 6 {
                s.remove(1);
            }
            faces.push(s);
        }
        let a = FaceAnalysis {
            faces,
            ..FaceAnalysis::default()
        };
        let t = build(&a, 0.4);
        assert_eq!(t.len(), 2, "{t:?}");
        assert!(t[0].cx < 0.3 && t[1].cx > 0.7);
        assert_eq!(t[1].presence, 0.9);
        assert_eq!(t[1].index_in(6), None);
        assert_eq!(t[1].filled().len(), 10);
        assert_eq!(t[1].filled()[6].cx, 0.75);
    }
}
