//! Tests of `fillers`.

use super::*;

/// Words of `text`, each `step` seconds apart; a `|` between words is a
/// pause of one more second.
fn words(text: &str, step: f64) -> Vec<Word> {
    let mut at = 0.0;
    let mut out = Vec::new();
    for t in text.split_whitespace() {
        if t == "|" {
            at += 1.0;
            continue;
        }
        out.push(Word {
            text: t.to_string(),
            start: at,
            end: at + step * 0.8,
            probability: 0.9,
        });
        at += step;
    }
    out
}

fn marked(text: &str) -> Vec<String> {
    let ws = words(text, 0.3);
    ws.iter()
        .zip(filler_marks(&ws))
        .filter(|(_, m)| *m)
        .map(|(w, _)| w.text.clone())
        .collect()
}

#[test]
fn single_word_fillers_are_found_stretched_or_not() {
    assert_eq!(
        marked("So, um, we ship. Uhh, Hmmm. Erm the er plan, ah, mm."),
        ["um,", "Uhh,", "Hmmm.", "Erm", "er", "ah,", "mm."]
    );
    assert!(marked("umbrella hum uhuru emerge mum 2um").is_empty());
}

#[test]
fn phrases_are_fillers_only_when_set_off() {
    assert_eq!(marked("It was hard, you know, to start."), ["you", "know,"]);
    assert_eq!(marked("Well, I mean, it works."), ["I", "mean,"]);
    assert_eq!(marked("It works | you know | fine"), ["you", "know"]);
    // Meaningful uses are kept.
    assert!(marked("I mean it.").is_empty());
    assert!(marked("Do you know the answer?").is_empty());
    assert!(marked("you know the answer").is_empty());
    assert!(marked("It was hard, you, know it").is_empty());
}

#[test]
fn removing_fillers_mends_punctuation_and_capitals() {
    let t = Transcript {
        language: "en".into(),
        language_probability: None,
        duration: 10.0,
        sentences: Vec::new(),
        words: words("Um, so it works, um. Uh, the plan is simple.", 0.3),
    };
    let (clean, index) = without_fillers(&t);
    let text: Vec<&str> = clean.words.iter().map(|w| w.text.as_str()).collect();
    assert_eq!(text, ["So", "it", "works.", "The", "plan", "is", "simple."]);
    assert_eq!(index, [1, 2, 3, 6, 7, 8, 9]);
    assert_eq!(clean.sentences.len(), 2, "{:?}", clean.sentences);
}

#[test]
fn cuts_cover_fillers_and_never_a_kept_word() {
    // "we | um | ship it" with pauses: the filler is cut with its padding,
    // not into the pauses' neighbours.
    let ws = words("we | um | ship it", 0.5);
    let marks = filler_marks(&ws);
    let cuts = clip_cuts(&ws, &marks, 0.0, 4.0);
    assert_eq!(cuts.len(), 1, "{cuts:?}");
    let (a, b) = cuts[0];
    assert!((a - (ws[1].start - PAD_SECS)).abs() < 1e-9, "{cuts:?}");
    assert!((b - (ws[1].end + PAD_SECS)).abs() < 1e-9, "{cuts:?}");
    for (w, m) in ws.iter().zip(&marks) {
        let mid = (w.start + w.end) / 2.0;
        assert_eq!(a <= mid && mid < b, *m, "{w:?}");
    }
    // Words touching the filler bound the cut.
    let tight = vec![
        Word {
            text: "we".into(),
            start: 0.0,
            end: 0.5,
            probability: 1.0,
        },
        Word {
            text: "um".into(),
            start: 0.5,
            end: 0.8,
            probability: 1.0,
        },
        Word {
            text: "go".into(),
            start: 0.8,
            end: 1.2,
            probability: 1.0,
        },
    ];
    let cuts = clip_cuts(&tight, &filler_marks(&tight), 0.0, 1.2);
    assert_eq!(cuts, [(0.5, 0.8)]);
    // Too short to cut: kept.
    let short = vec![
        Word {
            text: "we".into(),
            start: 0.0,
            end: 0.5,
            probability: 1.0,
        },
        Word {
            text: "uh".into(),
            start: 0.5,
            end: 0.55,
            probability: 1.0,
        },
        Word {
            text: "go".into(),
            start: 0.55,
            end: 1.0,
            probability: 1.0,
        },
    ];
    assert!(clip_cuts(&short, &filler_marks(&short), 0.0, 1.0).is_empty());
    // A clip of fillers only is left alone.
    let only = words("um uh", 0.5);
    assert!(clip_cuts(&only, &filler_marks(&only), 0.0, 1.0).is_empty());
}

#[test]
fn a_short_keep_at_the_edge_joins_the_cut() {
    // 0.11 s of silence before the filler's padded cut: cut with it.
    let ws = words("um so it goes", 0.5);
    let cuts = clip_cuts(&ws, &filler_marks(&ws), -0.15, 2.0);
    assert_eq!(cuts[0].0, -0.15, "{cuts:?}");
    // 0.16 s: kept.
    let cuts = clip_cuts(&ws, &filler_marks(&ws), -0.2, 2.0);
    assert!((cuts[0].0 + PAD_SECS).abs() < 1e-9, "{cuts:?}");
}

#[test]
fn times_map_both_ways_across_cuts() {
    let cuts = [(2.0, 3.0), (5.0, 5.5)];
    assert_eq!(removed_secs(&cuts), 1.5);
    assert_eq!(to_clip_time(&cuts, 1.0, 1.5), 0.5);
    assert_eq!(to_clip_time(&cuts, 1.0, 2.5), 1.0);
    assert_eq!(to_clip_time(&cuts, 1.0, 4.0), 2.0);
    assert_eq!(to_clip_time(&cuts, 1.0, 6.0), 3.5);
    for t in [0.5, 1.0, 2.0, 3.5] {
        let back = to_source_offset(&cuts, 1.0, t);
        assert!(
            (to_clip_time(&cuts, 1.0, 1.0 + back) - t).abs() < 1e-9,
            "{t}"
        );
    }
    assert_eq!(to_source_offset(&cuts, 1.0, 1.0), 2.0);
    assert_eq!(to_source_offset(&cuts, 1.0, 3.5), 5.0);
}

#[test]
fn clip_words_without_cuts_are_the_plain_shift() {
    let ws = words("one two three four", 0.5);
    let plain = clip_words(&ws, 0.4, 1.9, &[]);
    let expected: Vec<Word> = ws
        .iter()
        .filter(|w| w.end > 0.4 && w.start < 1.9)
        .map(|w| Word {
            text: w.text.clone(),
            start: (w.start - 0.4).max(0.0),
            end: (w.end - 0.4).min(1.5),
            probability: w.probability,
        })
        .collect();
    assert_eq!(plain, expected);
    let ws = words("So, um, we ship it.", 0.5);
    let cuts = clip_cuts(&ws, &filler_marks(&ws), 0.0, 2.5);
    let cut = clip_words(&ws, 0.0, 2.5, &cuts);
    let text: Vec<&str> = cut.iter().map(|w| w.text.as_str()).collect();
    assert_eq!(text, ["So,", "we", "ship", "it."]);
    let kept = 2.5 - removed_secs(&cuts);
    assert!(cut.iter().all(|w| w.end <= kept + 1e-9), "{cut:?}");
    assert!(
        (cut[1].start - (1.0 - removed_secs(&cuts))).abs() < 1e-9,
        "{cut:?}"
    );
}
