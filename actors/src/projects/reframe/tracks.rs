//! Face tracks: the faces of consecutive samples of one shot linked into
//! one track per person (nearest previous position, greedy, largest faces
//! first); then the tracks of different shots chained into subjects (a
//! track that begins in a later shot than another ends continues it, the
//! nearest first): the same man seen from two camera angles, or the people
//! of a cut-edited interview shown one at a time, are one subject to follow,
//! not two people side by side.

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

    /// Whether the track is in any of these samples (a shot's, say).
    pub fn seen_in(&self, samples: std::ops::Range<usize>) -> bool {
        self.positions
            .get(samples)
            .is_some_and(|p| p.iter().any(Option::is_some))
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
    let shots = analysis.shots();
    let mut tracks: Vec<Track> = Vec::new();
    // Last known position of each track, and the sample it was seen in.
    let mut last: Vec<(usize, Face)> = Vec::new();
    for (s, faces) in analysis.faces.iter().enumerate() {
        let mut taken = vec![false; tracks.len()];
        for (i, f) in faces.iter().enumerate() {
            let nearest = last
                .iter()
                .enumerate()
                .filter(|(t, (seen, _))| !taken[*t] && shots[*seen] == shots[s])
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
    let mut tracks = chain_across_shots(tracks, &shots);
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

/// Chains tracks of different shots: in order of their first sample, each
/// track continues the chain that ended in an earlier shot than it begins
/// (the one whose last face is nearest its first), else starts a chain.
fn chain_across_shots(mut tracks: Vec<Track>, shots: &[usize]) -> Vec<Track> {
    let span = |t: &Track| {
        let first = t.positions.iter().position(Option::is_some);
        let last = t.positions.iter().rposition(Option::is_some);
        first.zip(last)
    };
    tracks.retain(|t| span(t).is_some());
    tracks.sort_by_key(|t| span(t).map(|(a, _)| a));
    let mut chains: Vec<Track> = Vec::new();
    for t in tracks {
        let (first, _) = span(&t).expect("a track with a face");
        let start = t.positions[first].map(|(_, f)| f).expect("its first face");
        let best = chains
            .iter()
            .enumerate()
            .filter_map(|(c, chain)| {
                let (_, end) = span(chain)?;
                let f = chain.positions[end]?.1;
                (shots[end] < shots[first]).then(|| {
                    let d = ((f.cx - start.cx).powi(2) + (f.cy - start.cy).powi(2)).sqrt();
                    (c, d)
                })
            })
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(c, _)| c);
        match best {
            Some(c) => {
                for (slot, p) in chains[c].positions.iter_mut().zip(t.positions) {
                    if p.is_some() {
                        *slot = p;
                    }
                }
            }
            None => chains.push(t),
        }
    }
    chains
}

/// A face standing still at `cx` (share of the width), in every sample:
/// the track the layout tests start from.
#[cfg(test)]
pub(crate) fn still(cx: f64, size: f64) -> Track {
    Track {
        cx,
        cy: 0.4,
        size,
        presence: 1.0,
        positions: Vec::new(),
    }
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

    fn analysis(faces: Vec<Vec<Face>>, cuts: Vec<f64>) -> FaceAnalysis {
        FaceAnalysis {
            faces,
            cuts,
            ..FaceAnalysis::default()
        }
    }

    /// One man from two camera angles (a cut at 5 s moves his face from
    /// the left to the right edge): one subject, whose positions jump at the
    /// cut. Without the cut the jump is too far to be one track.
    #[test]
    fn one_person_from_two_angles_is_one_subject() {
        let faces: Vec<Vec<Face>> = (0..10)
            .map(|i| vec![face(if i < 5 { 0.3 } else { 0.85 }, 0.2)])
            .collect();
        let t = build(&analysis(faces.clone(), vec![4.5]), 0.4);
        assert_eq!(t.len(), 1, "{t:?}");
        assert_eq!(t[0].presence, 1.0);
        assert_eq!(t[0].positions[4].unwrap().1.cx, 0.3);
        assert_eq!(t[0].positions[5].unwrap().1.cx, 0.85);
        assert_eq!(build(&analysis(faces, vec![]), 0.4).len(), 2);
    }

    /// Two people on screen together stay two, and a close-up after the
    /// two-shot continues the nearer of them.
    #[test]
    fn people_seen_together_stay_apart_across_a_cut() {
        let mut faces: Vec<Vec<Face>> = (0..6)
            .map(|_| vec![face(0.25, 0.2), face(0.75, 0.2)])
            .collect();
        faces.extend((0..4).map(|_| vec![face(0.7, 0.3)]));
        let t = build(&analysis(faces, vec![5.5]), 0.4);
        assert_eq!(t.len(), 2, "{t:?}");
        let right = t
            .iter()
            .find(|t| t.positions[0].unwrap().1.cx > 0.5)
            .unwrap();
        assert_eq!(right.positions[9].unwrap().1.cx, 0.7);
        let left = t
            .iter()
            .find(|t| t.positions[0].unwrap().1.cx < 0.5)
            .unwrap();
        assert!(left.positions[9].is_none());
    }
}
