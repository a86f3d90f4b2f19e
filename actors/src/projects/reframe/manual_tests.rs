use super::*;
use crate::projects::reframe::graph::piecewise_at;

const SRC: (u32, u32) = (1920, 1080);
const OUT: (u32, u32) = (1080, 1920);

fn face(cx: f64) -> Face {
    Face {
        cx,
        cy: 0.4,
        size: 0.1,
    }
}

/// Ten samples: a face at the left in all of them, one at the right in
/// the last six.
fn seen() -> SeenFaces {
    SeenFaces {
        faces: (0..10)
            .map(|i| {
                if i >= 4 {
                    vec![face(0.25), face(0.75)]
                } else {
                    vec![face(0.25)]
                }
            })
            .collect(),
        cuts: Vec::new(),
        width: SRC.0,
        height: SRC.1,
        seam: None,
    }
}

fn follow(x: f64, fit: Vec<(f64, f64)>) -> Framing {
    let (w, h) = graph::crop_box(SRC.0, SRC.1, OUT.0, OUT.1);
    Framing {
        layout: Layout::Single,
        reason: "one face".into(),
        composition: Composition::Follow {
            w,
            h,
            y: 0,
            path: vec![(0.0, x)],
            fit,
        },
        faces: Vec::new(),
        seen: Some(seen()),
    }
}

/// The followed path and the fitted spans of a framing.
type Paths = (Vec<(f64, f64)>, Vec<(f64, f64)>);

fn path_of(f: &Framing) -> Paths {
    match &f.composition {
        Composition::Follow { path, fit, .. } => (path.clone(), fit.clone()),
        other => panic!("not a crop: {other:?}"),
    }
}

#[test]
fn no_span_in_range_leaves_the_framing() {
    let f = follow(100.0, Vec::new());
    assert_eq!(apply(&f, &[], (10.0, 10.0), SRC, OUT), f);
    let outside = ManualSpan::fixed(30.0, 35.0, 1500.0);
    assert_eq!(apply(&f, &[outside], (10.0, 10.0), SRC, OUT), f);
}

#[test]
fn a_fixed_span_moves_the_crop_only_inside_it() {
    let f = follow(100.0, vec![(0.0, 10.0)]);
    // The clip is source 10..20 s; the span is source 13..16 s.
    let drawn = apply(
        &f,
        &[ManualSpan::fixed(13.0, 16.0, 1500.0)],
        (10.0, 10.0),
        SRC,
        OUT,
    );
    let (path, fit) = path_of(&drawn);
    let cw = graph::crop_box(SRC.0, SRC.1, OUT.0, OUT.1).0 as f64;
    let right = (1500.0 - cw / 2.0).min(SRC.0 as f64 - cw);
    assert_eq!(piecewise_at(&path, 1.0), 100.0);
    assert_eq!(piecewise_at(&path, 3.0), right);
    assert_eq!(piecewise_at(&path, 4.5), right);
    assert_eq!(piecewise_at(&path, 5.9), right);
    assert_eq!(piecewise_at(&path, 8.0), 100.0);
    // The whole-frame span no longer covers the hand-set one.
    assert_eq!(fit, vec![(0.0, 3.0), (6.0, 10.0)]);
    assert_eq!(drawn.layout, Layout::Single);
    assert!(drawn.reason.ends_with("1 span(s) framed by hand"));
    // The captions avoid the faces as now drawn.
    assert!(!drawn.faces.is_empty());
}

#[test]
fn spans_that_touch_jump_from_one_to_the_other() {
    let mut f = follow(0.0, Vec::new());
    f.composition = Composition::Fit { inset: None };
    let drawn = apply(
        &f,
        &[
            ManualSpan::fixed(10.0, 12.0, 0.0),
            ManualSpan::fixed(12.0, 20.0, 1920.0),
        ],
        (10.0, 10.0),
        SRC,
        OUT,
    );
    let (path, fit) = path_of(&drawn);
    let cw = graph::crop_box(SRC.0, SRC.1, OUT.0, OUT.1).0 as f64;
    for t in [0.0, 1.0, 1.99] {
        assert_eq!(piecewise_at(&path, t), 0.0, "at {t}: {path:?}");
    }
    for t in [2.0, 5.0, 9.9] {
        assert_eq!(piecewise_at(&path, t), 1920.0 - cw, "at {t}: {path:?}");
    }
    assert_eq!(fit, vec![(10.0, 11.0)]);
}

#[test]
fn a_span_over_a_whole_frame_layout_crops_there_and_fits_elsewhere() {
    let mut f = follow(0.0, Vec::new());
    f.layout = Layout::Split;
    f.composition = Composition::Fit { inset: None };
    let drawn = apply(
        &f,
        &[ManualSpan::fixed(2.0, 4.0, 480.0)],
        (0.0, 10.0),
        SRC,
        OUT,
    );
    let (path, fit) = path_of(&drawn);
    assert_eq!(drawn.layout, Layout::Single);
    assert_eq!(fit, vec![(0.0, 2.0), (4.0, 11.0)]);
    let cw = graph::crop_box(SRC.0, SRC.1, OUT.0, OUT.1).0 as f64;
    assert_eq!(piecewise_at(&path, 3.0), (480.0 - cw / 2.0).max(0.0));
}

#[test]
fn faces_are_listed_most_present_first_and_followed_by_id() {
    let s = seen();
    let tracks = face_tracks(&s);
    assert_eq!(tracks.len(), 2);
    assert!((tracks[0].cx - 0.25).abs() < 1e-9);
    assert!((tracks[1].cx - 0.75).abs() < 1e-9);
    let right = ManualSpan::following(&s, 100.0, 1, 104.0, 110.0).unwrap();
    assert_eq!(right.face, Some(1));
    // Source time: the analysis starts at 100 s.
    assert_eq!(right.centre[0].0, 100.0);
    assert!((right.centre_at(106.0) - 0.75 * 1920.0).abs() < 1.0);
    assert!(ManualSpan::following(&s, 100.0, 2, 104.0, 110.0).is_none());
}

#[test]
fn a_face_span_follows_its_path() {
    let s = seen();
    let f = follow(0.0, Vec::new());
    let span = ManualSpan::following(&s, 0.0, 1, 5.0, 9.0).unwrap();
    let (path, _) = path_of(&apply(&f, &[span], (0.0, 10.0), SRC, OUT));
    let cw = graph::crop_box(SRC.0, SRC.1, OUT.0, OUT.1).0 as f64;
    let want = (0.75 * 1920.0 - cw / 2.0).min(1920.0 - cw);
    assert!((piecewise_at(&path, 7.0) - want).abs() < 1.0);
    assert_eq!(piecewise_at(&path, 2.0), 0.0);
}

#[test]
fn played_and_source_seconds_round_trip_across_cuts() {
    let cuts = [(12.0, 13.0), (15.0, 15.5)];
    assert_eq!(played_to_source(1.0, 10.0, &cuts), 11.0);
    assert_eq!(played_to_source(3.0, 10.0, &cuts), 14.0);
    assert_eq!(played_to_source(5.0, 10.0, &cuts), 16.5);
    for t in [0.5, 1.9, 2.5, 4.2, 7.0] {
        let s = played_to_source(t, 10.0, &cuts);
        assert!((source_to_played(s, 10.0, &cuts).unwrap() - t).abs() < 1e-9);
    }
    assert_eq!(source_to_played(12.5, 10.0, &cuts), None);
}

#[test]
fn shots_cover_the_samples() {
    let mut s = seen();
    s.cuts = vec![4.0];
    assert_eq!(s.shots(), vec![(0.0, 4.0), (4.0, 10.0)]);
    assert_eq!(shot_of(&s, 5), 1);
}

#[test]
fn a_slice_is_the_samples_and_shots_of_its_range() {
    let mut s = seen();
    s.cuts = vec![3.0, 7.0];
    let part = s.slice(2.0, 4.0).unwrap();
    assert_eq!(part.faces.len(), 4);
    assert_eq!(part.faces[0], s.faces[2]);
    assert_eq!(part.cuts, vec![1.0]);
    assert!(part.mouth.is_empty());
    // Up to the end of what was seen; nothing past it.
    assert_eq!(s.slice(8.0, 5.0).unwrap().faces.len(), 2);
    assert!(s.slice(10.0, 2.0).is_none());
    assert!(s.slice(-1.0, 2.0).is_none());
}

#[test]
fn a_range_inside_what_was_seen_is_framed_without_decoding() {
    let s = seen();
    // The first four seconds: one face → single, a crop on it.
    let f = crate::projects::reframe::frame_from_seen(&s, 0.0, 4.0, OUT, Layout::Auto).unwrap();
    assert_eq!(f.layout, Layout::Single, "{}", f.reason);
    assert!(f.seen.is_some());
    // The last six: two faces of one size → who talks is needed (auto):
    // not from what was seen; a forced split is.
    assert!(crate::projects::reframe::frame_from_seen(&s, 4.0, 6.0, OUT, Layout::Auto).is_none());
    assert!(
        crate::projects::reframe::frame_from_seen(&s, 4.0, 6.0, OUT, Layout::Speaker).is_none()
    );
    let split =
        crate::projects::reframe::frame_from_seen(&s, 4.0, 6.0, OUT, Layout::Split).unwrap();
    assert_eq!(split.layout, Layout::Split);
    assert!(matches!(split.composition, Composition::Split(_)));
}
