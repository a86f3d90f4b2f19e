//! Tests of [`super`]: crop boxes, paths across shots, split panels and
//! the filter graphs.

use super::*;

use crate::projects::reframe::tracks::still as track;

#[test]
fn crop_box_has_the_output_shape() {
    assert_eq!(crop_box(1920, 1080, 1080, 1920), (606, 1080));
    assert_eq!(crop_box(1080, 1920, 1080, 1920), (1080, 1920));
    assert_eq!(crop_box(500, 2000, 1080, 1920), (500, 888));
    assert_eq!(crop_box(1920, 1080, 1080, 1080), (1080, 1080));
    assert_eq!(crop_box(1920, 1080, 1920, 1080), (1920, 1080));
}

/// The speaker crop moves across a landscape source; a source of the
/// output's shape is zoomed in on instead (else the crop is the whole
/// frame, and cutting to the talker changes nothing).
#[test]
fn the_speaker_crop_zooms_where_it_cannot_move() {
    assert_eq!(speaker_box((1920, 1080), (1080, 1920)), (606, 1080));
    assert_eq!(speaker_box((480, 854), (1080, 1920)), (320, 568));
    assert_eq!(speaker_box((1080, 1920), (1080, 1080)), (720, 720));
}

#[test]
fn piecewise_expression_interpolates() {
    let e = piecewise(&[(0.0, 10.0), (1.0, 20.0)]);
    assert_eq!(
        e,
        "if(lt(t,0.000),10.0,if(lt(t,1.000),10.0+(10.0)*(t-0.000)/1.000,20.0))"
    );
    assert_eq!(piecewise(&[(0.0, 5.0)]), "5.0");
}

#[test]
fn simplify_drops_collinear_points() {
    let pts = vec![(0.0, 0.0), (1.0, 10.0), (2.0, 20.0), (3.0, 20.0)];
    assert_eq!(simplify(pts), vec![(0.0, 0.0), (2.0, 20.0), (3.0, 20.0)]);
}

#[test]
fn split_boxes_have_each_half_shape_and_left_face_first() {
    let (a, b) = (track(0.75, 0.15), track(0.25, 0.15));
    let Composition::Split(boxes) = split(Some([&a, &b]), None, (1280, 720), (1080, 1920)) else {
        panic!("not a split");
    };
    // Left face on top.
    assert!(boxes[0].x < boxes[1].x, "{boxes:?}");
    for bx in boxes {
        let aspect = bx.w as f64 / bx.h as f64;
        assert!((aspect - 1080.0 / 960.0).abs() < 0.02, "{bx:?}");
        assert!(bx.x + bx.w <= 1280 && bx.y + bx.h <= 720);
    }
    let Composition::Split(halves) = split(None, None, (1280, 720), (1920, 1080)) else {
        panic!("not a split");
    };
    assert_eq!(halves[0].x, 0);
    assert!(halves[1].x >= 640);
}

fn at(cx: f64) -> Option<face::Face> {
    Some(face::Face {
        cx,
        cy: 0.4,
        size: 0.2,
    })
}

/// A face for three samples, then a shot (from 2.5 s) without one.
fn faced_then_not() -> FaceSamples {
    vec![at(0.3), at(0.3), at(0.3), None, None]
}

/// Across a cut the crop jumps to the new shot's face (no glide through
/// the frame), and a shot without a face is fitted, not cropped blind.
#[test]
fn the_crop_jumps_at_a_cut_and_a_faceless_shot_is_fitted() {
    let src = (1920, 1080);
    let mut samples: FaceSamples = vec![at(0.25); 5];
    samples.extend(vec![at(0.75); 5]);
    let Composition::Follow { w, path, fit, .. } = follow_face(&samples, &[4.4], src, (1080, 1920))
    else {
        panic!("not a followed crop");
    };
    assert!(fit.is_empty());
    let x = |t: f64| {
        let i = path.iter().rposition(|(pt, _)| *pt <= t).unwrap_or(0);
        path[i].1 + w as f64 / 2.0
    };
    assert!((x(4.39) - 0.25 * 1920.0).abs() < 40.0, "{path:?}");
    assert!((x(4.41) - 0.75 * 1920.0).abs() < 40.0, "{path:?}");
    let Composition::Follow { fit, .. } = follow_face(&faced_then_not(), &[2.5], src, (1080, 1920))
    else {
        panic!("not a followed crop");
    };
    assert_eq!(fit, vec![(2.5, 6.0)]);
    assert_eq!(shot_ranges(5, &[2.5]), vec![0..3, 3..5]);
    assert_eq!(shot_ranges(5, &[]), vec![0..5]);
}

/// Speaker: a shot in which neither of the two is seen (a title card, a
/// wide shot with faces too small to find) is fitted, not cropped at where
/// a face was before.
#[test]
fn the_speaker_crop_fits_a_shot_without_either_face() {
    let with_positions = |cx: f64| Track {
        positions: faced_then_not()
            .into_iter()
            .map(|f| f.map(|f| (0, face::Face { cx, ..f })))
            .collect(),
        ..track(cx, 0.2)
    };
    let (a, b) = (with_positions(0.25), with_positions(0.75));
    let steps = (5.0 / STEP) as usize;
    let timeline = SpeakerTimeline {
        active: vec![0; steps],
        confidence: 1.0,
        switches: 0,
    };
    let Composition::Follow { fit, .. } =
        follow_speaker([&a, &b], &timeline, &[2.5], (1920, 1080), (1080, 1920))
    else {
        panic!("not a followed crop");
    };
    assert_eq!(fit, vec![(2.5, 6.0)]);
}

/// A split-screen source: each box stays in its own panel, even when
/// 3.5 face widths would reach over the seam.
#[test]
fn split_boxes_stay_in_their_panels() {
    let (a, b) = (track(0.3, 0.2), track(0.72, 0.2));
    let Composition::Split(boxes) = split(Some([&a, &b]), Some(0.5), (640, 368), (1080, 1920))
    else {
        panic!("not a split");
    };
    assert!(boxes[0].x + boxes[0].w <= 318, "{boxes:?}");
    assert!(boxes[1].x >= 322, "{boxes:?}");
    let Composition::Split(free) = split(Some([&a, &b]), None, (640, 368), (1080, 1920)) else {
        panic!("not a split");
    };
    assert!(free[0].x + free[0].w > 320, "{free:?}");
}

#[test]
fn every_graph_ends_in_v_at_the_output_size() {
    let ass = Path::new("/tmp/c.ass");
    let t = track(0.9, 0.08);
    for c in [
        follow_face(&vec![None; 3], &[], (1280, 720), (1080, 1350)),
        follow_face(&faced_then_not(), &[2.5], (1280, 720), (1080, 1350)),
        split(None, None, (1280, 720), (1080, 1920)),
        screen(Some(&t), (1280, 720)),
        screen(None, (1280, 720)),
    ] {
        let g = filter_graph(&c, (1080, 1350), ass, "");
        assert!(g.ends_with("format=yuv420p[v]"), "{g}");
        assert!(g.contains("scale=1080:1350:flags=bicubic"), "{g}");
        let (cut, _) = cut_filters(&[(11.0, 11.5)], 10.0);
        let g = filter_graph(&c, (1080, 1350), ass, &cut);
        assert!(g.contains(&format!("{cut}scale=1080:1350")), "{g}");
    }
}

#[test]
fn cut_filters_drop_the_spans_and_close_the_gaps() {
    assert_eq!(cut_filters(&[], 3.0), (String::new(), String::new()));
    let (v, a) = cut_filters(&[(11.0, 11.5), (14.0, 14.25)], 10.0);
    assert_eq!(
        v,
        "select='not(between(t,1.000,1.500)+between(t,4.000,4.250))',\
         setpts='PTS-(0.500*gte(T,1.500)+0.250*gte(T,4.250))/TB',"
    );
    assert_eq!(
        a,
        "aselect='not(between(t,1.000,1.500)+between(t,4.000,4.250))',asetpts=N/SR/TB"
    );
}
