//! Tests of [`super`]: the evidence, the best sequence of faces shown
//! (within and across shots), and the energy measure.

use super::*;
use crate::media::face::Face;

fn track(cx: f64, steps: usize) -> Track {
    let samples = steps.div_ceil(MOTION_FPS as usize);
    let index = if cx < 0.5 { 0 } else { 1 };
    Track {
        cx,
        cy: 0.4,
        size: 0.2,
        presence: 1.0,
        positions: vec![
            Some((
                index,
                Face {
                    cx,
                    cy: 0.4,
                    size: 0.2
                }
            ));
            samples
        ],
    }
}

/// `talker(k)`: 0 left, 1 right, None silence.
fn inputs(
    steps: usize,
    talker: impl Fn(usize) -> Option<usize>,
    stereo: bool,
    mouths: bool,
) -> (FaceAnalysis, StereoEnergy) {
    let mut a = FaceAnalysis::default();
    let mut e = StereoEnergy::default();
    for k in 0..steps {
        if k % MOTION_FPS as usize == 0 {
            a.faces.push(vec![
                Face {
                    cx: 0.25,
                    cy: 0.4,
                    size: 0.2,
                },
                Face {
                    cx: 0.75,
                    cy: 0.4,
                    size: 0.2,
                },
            ]);
        }
        let t = talker(k);
        // Mouths flap while talking (and blink noise otherwise).
        let m = |who| {
            if mouths && t == Some(who) {
                6.0 + (k % 3) as f64
            } else {
                0.8
            }
        };
        a.mouth.push(vec![m(0), m(1)]);
        let (l, r) = match (t, stereo) {
            (None, _) => (0.0005, 0.0005),
            (Some(_), false) => (0.2, 0.2),
            (Some(0), true) => (0.2, 0.03),
            (Some(_), true) => (0.03, 0.2),
        };
        e.left.push(l);
        e.right.push(r);
    }
    (a, e)
}

/// Left talks 0–6 s, right 6–12 s, with a 1 s interjection of the other
/// side at 3 s (an "mm-hm, right") that must not switch the crop.
fn alternating(k: usize) -> Option<usize> {
    let t = k as f64 * STEP;
    if (2.99..3.99).contains(&t) {
        Some(1)
    } else if (5.8..6.0).contains(&t) {
        None
    } else if t < 6.0 {
        Some(0)
    } else {
        Some(1)
    }
}

fn check(stereo: bool, mouths: bool) {
    let at = |secs: f64| (secs / STEP).round() as usize;
    let steps = at(12.0);
    let (a, e) = inputs(steps, alternating, stereo, mouths);
    let (l, r) = (track(0.25, steps), track(0.75, steps));
    let tl = timeline([&l, &r], &a, &e);
    assert_eq!(tl.switches, 1, "{tl:?}");
    assert!(
        tl.active[..at(5.0)].iter().all(|&f| f == 0),
        "{:?}",
        tl.active
    );
    assert!(
        tl.active[at(8.0)..].iter().all(|&f| f == 1),
        "{:?}",
        tl.active
    );
    // Seen whole, the cut comes where the talk turns, not a lead later.
    let turn = tl.active.iter().position(|&f| f == 1).unwrap();
    assert!(turn.abs_diff(at(6.0)) <= at(0.3), "turned at step {turn}");
    assert!(tl.confidence > 0.8, "{tl:?}");
}

#[test]
fn the_best_sequence_cuts_where_the_talk_turns() {
    // Face 0 for 4 s, face 1 for 3 s, with a 1 s burst of face 1 at
    // 1.5 s and noise that flips sign every step.
    let score: Vec<f64> = (0..70)
        .map(|k| {
            let noise = if k % 2 == 0 { 0.3 } else { -0.3 };
            match k {
                15..25 => -0.5,
                0..40 => 0.4 + noise,
                _ => -0.4 + noise,
            }
        })
        .collect();
    let seq = best_sequence(&score, &[], 20);
    assert!(seq[..40].iter().all(|&f| f == 0), "{seq:?}");
    assert!(seq[40..].iter().all(|&f| f == 1), "{seq:?}");
    // Runs shorter than half the hold are not allowed at either end;
    // half a hold is.
    let late: Vec<f64> = (0..40).map(|k| if k < 35 { 0.3 } else { -0.3 }).collect();
    assert!(best_sequence(&late, &[], 20).iter().all(|&f| f == 0));
    let early: Vec<f64> = (0..40).map(|k| if k < 5 { 0.2 } else { -0.2 }).collect();
    assert!(best_sequence(&early, &[], 20).iter().all(|&f| f == 1));
    let ends: Vec<f64> = (0..40).map(|k| if k < 28 { 0.3 } else { -0.3 }).collect();
    let seq = best_sequence(&ends, &[], 20);
    assert!(
        seq[..28].iter().all(|&f| f == 0) && seq[28..].iter().all(|&f| f == 1),
        "{seq:?}"
    );
    // Shorter than one hold: the better face throughout.
    assert_eq!(best_sequence(&[-0.5, 0.1, -0.2], &[], 20), vec![1, 1, 1]);
    assert_eq!(best_sequence(&[0.0; 5], &[], 20), vec![0; 5]);
    assert!(best_sequence(&[], &[], 20).is_empty());
}

/// A cut-edited interview: a two-shot (0–4 s), a 1.5 s close-up of the
/// right one listening while the left one goes on talking (a reaction
/// shot), then the two-shot again. The crop cannot stay on the left
/// face, which is not on screen during the close-up: it shows the right
/// one there (however short that shot is), and the left one again after.
#[test]
fn a_face_not_in_the_shot_is_not_shown() {
    let at = |secs: f64| (secs / STEP).round() as usize;
    let steps = at(10.0);
    let (mut a, e) = inputs(steps, |_| Some(0), false, true);
    a.cuts = vec![4.0, 5.5];
    let (mut l, r) = (track(0.25, steps), track(0.75, steps));
    // In the close-up's samples (4 and 5) only the right face is seen,
    // as the sample's first face.
    for sample in [4, 5] {
        a.faces[sample].remove(0);
        l.positions[sample] = None;
    }
    for k in at(4.0)..at(6.0) {
        a.mouth[k].remove(0);
    }
    let r = Track {
        positions: r
            .positions
            .iter()
            .enumerate()
            .map(|(s, p)| p.map(|(i, f)| (if (4..6).contains(&s) { 0 } else { i }, f)))
            .collect(),
        ..r
    };
    let tl = timeline([&l, &r], &a, &e);
    assert!(
        tl.active[..at(4.0)].iter().all(|&f| f == 0),
        "{:?}",
        tl.active
    );
    assert!(
        tl.active[at(4.0)..at(5.5)].iter().all(|&f| f == 1),
        "{:?}",
        tl.active
    );
    assert!(
        tl.active[at(6.0)..].iter().all(|&f| f == 0),
        "{:?}",
        tl.active
    );
    assert_eq!(tl.switches, 2, "{tl:?}");
}

#[test]
fn stereo_balance_alone_finds_the_talker() {
    check(true, false);
}

#[test]
fn mouth_motion_alone_finds_the_talker() {
    check(false, true);
}

#[test]
fn no_evidence_means_no_confidence() {
    let (a, e) = inputs(30, |_| Some(0), false, false);
    let (l, r) = (track(0.25, 30), track(0.75, 30));
    let tl = timeline([&l, &r], &a, &e);
    assert_eq!((tl.switches, tl.confidence), (0, 0.0));
}

#[test]
fn jitter_counts_cuts_apart() {
    let pts = [(0.0, 100.0), (1.0, 110.0), (1.001, 600.0), (2.0, 600.0)];
    let j = jitter(&pts, 2.0, 10.0, 50.0);
    assert_eq!(j.cuts, 1);
    assert!(
        j.mean_px_per_frame > 0.5 && j.mean_px_per_frame < 1.5,
        "{j:?}"
    );
}

#[test]
fn energy_is_per_channel() {
    let mut bytes = Vec::new();
    for _ in 0..(RATE as f64 * STEP) as usize {
        bytes.extend_from_slice(&16384i16.to_le_bytes());
        bytes.extend_from_slice(&0i16.to_le_bytes());
    }
    let e = energy_of(&bytes);
    assert_eq!(e.left.len(), 1);
    assert!((e.left[0] - 0.5).abs() < 1e-6 && e.right[0] == 0.0);
}
