use super::*;

pub(crate) fn sample(fps: f64) -> Timeline {
    Timeline {
        name: "Talk <1> & more".into(),
        language: "en".into(),
        source: SourceInfo {
            name: "talk.mp4".into(),
            url: "file:///tmp/my%20talk.mp4".into(),
            duration: 120.0,
            fps,
            width: 1280,
            height: 720,
        },
        clips: vec![
            ExportClip {
                index: 1,
                title: "Why videos go viral".into(),
                start: 40.0,
                end: 70.5,
                captions: vec![
                    CaptionLine {
                        start: 0.0,
                        end: 2.0,
                        text: "Have you ever wondered?".into(),
                    },
                    CaptionLine {
                        start: 2.5,
                        end: 40.0,
                        text: "Runs past the clip's end.".into(),
                    },
                ],
            },
            ExportClip {
                index: 2,
                title: "The first\nthree seconds".into(),
                start: 10.0,
                end: 30.0,
                captions: vec![],
            },
        ],
    }
}

#[test]
fn frame_rates_snap_to_editing_rates() {
    assert_eq!(
        FrameRate::of(29.97),
        FrameRate {
            num: 30_000,
            den: 1001
        }
    );
    assert_eq!(
        FrameRate::of(23.976),
        FrameRate {
            num: 24_000,
            den: 1001
        }
    );
    assert_eq!(FrameRate::of(25.0), FrameRate { num: 25, den: 1 });
    assert_eq!(FrameRate::of(0.0), FrameRate { num: 30, den: 1 });
    assert_eq!(FrameRate::of(f64::NAN), FrameRate { num: 30, den: 1 });
    assert_eq!(FrameRate::of(29.97).timebase(), 30);
}

#[test]
fn clips_are_placed_back_to_back_on_frames() {
    let t = sample(25.0);
    let placed = t.placed();
    assert_eq!(placed.len(), 2);
    let (_, a) = placed[0];
    assert_eq!((a.source_in, a.source_out, a.record_in), (1000, 1763, 0));
    let (_, b) = placed[1];
    assert_eq!((b.source_in, b.source_out, b.record_in), (250, 750, 763));
    assert_eq!(t.total_frames(), 763 + 500);
}

#[test]
fn captions_are_clipped_to_their_clip() {
    let t = sample(25.0);
    let placed = t.placed();
    let (c, p) = placed[0];
    let lines = t.caption_frames(c, p);
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0], (1000, 1050, "Have you ever wondered?".into()));
    assert_eq!(lines[1].0, 1000 + 63);
    assert_eq!(lines[1].1, p.source_out);
}

#[test]
fn a_clip_past_the_source_end_is_cut_to_it_and_never_empty() {
    let mut t = sample(25.0);
    t.clips[0].start = 119.99;
    t.clips[0].end = 130.0;
    let (_, p) = t.placed()[0];
    assert_eq!(p.source_out, 3000);
    assert!(p.len() >= 1);
}

#[test]
fn every_format_names_each_clip_and_escapes_markup() {
    let t = sample(29.97);
    let x = to_fcpxml(&t);
    assert!(x.contains("<fcpxml version=\"1.10\">"));
    assert!(x.contains("frameDuration=\"1001/30000s\""));
    assert!(x.contains("Talk &lt;1&gt; &amp; more"));
    assert!(x.contains("name=\"2. The first three seconds\""));
    assert_eq!(x.matches("<asset-clip ").count(), 2);
    assert_eq!(x.matches("<caption ").count(), 2);
    let e = to_edl(&t);
    assert!(e.starts_with("TITLE: Talk <1> & more\nFCM: NON-DROP FRAME\n"));
    // 40 s of 29.97 fps video is frame 1199: non-drop timecode counts frames.
    assert!(
        e.contains("001  AX       AA/V  C        00:00:39:29"),
        "{e}"
    );
    assert!(e.contains("* TO CLIP NAME: 2. The first three seconds"));
    let o: serde_json::Value = serde_json::from_str(&to_otio(&t)).unwrap();
    assert_eq!(o["OTIO_SCHEMA"], "Timeline.1");
    let tracks = o["tracks"]["children"].as_array().unwrap();
    assert_eq!(tracks.len(), 3);
    assert_eq!(tracks[0]["children"].as_array().unwrap().len(), 2);
    assert_eq!(tracks[2]["name"], "Captions");
}

#[test]
fn file_urls_are_percent_encoded() {
    let u = file_url(std::path::Path::new("/no/such dir/a#b.mp4"));
    assert_eq!(u, "file:///no/such%20dir/a%23b.mp4");
}

#[test]
fn each_format_puts_the_second_clip_after_the_first_at_its_source_range() {
    // Clip 2: source 10–30 s (frames 250–750), on the timeline after clip 1's 763 frames.
    let t = sample(25.0);
    let x = to_fcpxml(&t);
    assert!(
        x.contains("offset=\"763/25s\" start=\"10s\" duration=\"20s\""),
        "{x}"
    );
    assert!(
        x.contains("offset=\"0s\" start=\"40s\" duration=\"763/25s\""),
        "{x}"
    );
    let e = to_edl(&t);
    assert!(
        e.contains("002  AX       AA/V  C        00:00:10:00 00:00:30:00 01:00:30:13 01:00:50:13"),
        "{e}"
    );
    let o: serde_json::Value = serde_json::from_str(&to_otio(&t)).unwrap();
    let second = &o["tracks"]["children"][0]["children"][1]["source_range"];
    assert_eq!(second["start_time"]["value"], 250.0);
    assert_eq!(second["duration"]["value"], 500.0);
    // Captions: a gap to the first line, the line (2 s), a gap, the second line.
    let captions = o["tracks"]["children"][2]["children"].as_array().unwrap();
    assert_eq!(captions.len(), 3, "{captions:?}");
    assert_eq!(captions[0]["OTIO_SCHEMA"], "Clip.2");
    assert_eq!(captions[0]["source_range"]["duration"]["value"], 50.0);
    assert_eq!(captions[1]["OTIO_SCHEMA"], "Gap.1");
}
