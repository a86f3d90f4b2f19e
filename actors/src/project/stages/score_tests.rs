//! Tests of `score`.

use super::*;
use crate::transcript::sentences_from_words;

/// Builds a transcript from sentences spoken at `wps` words per second,
/// each followed by `gap` seconds of silence.
fn transcript(sentences: &[&str], wps: f64, gap: f64) -> Transcript {
    let mut words = Vec::new();
    let mut t = 0.5;
    for s in sentences {
        for text in s.split_whitespace() {
            let dur = 1.0 / wps;
            words.push(Word {
                text: text.to_string(),
                start: t,
                end: t + 0.8 * dur,
                probability: 1.0,
            });
            t += dur;
        }
        t += gap;
    }
    Transcript {
        language: "en".into(),
        duration: t + 1.0,
        sentences: sentences_from_words(&words),
        words,
    }
}

const TALK: &[&str] = &[
    "Why do most people fail at this?",
    "Here's the secret nobody tells you about building habits that actually last.",
    "I spent three years getting this completely wrong.",
    "The biggest mistake is trying to change everything at once.",
    "Instead you pick one tiny behaviour and attach it to something you already do.",
    "That sounds too simple, right?",
    "But it works because your brain loves a cue it already trusts.",
    "We tested it with forty people over six months.",
    "The results were honestly surprising!",
    "So let me walk you through the exact steps we used.",
    "First you write down the routine you never skip.",
    "Then you stack the new habit right after it, every single day.",
];

fn long_talk(repeats: usize) -> Transcript {
    let sentences: Vec<&str> = TALK
        .iter()
        .copied()
        .cycle()
        .take(TALK.len() * repeats)
        .collect();
    transcript(&sentences, 2.8, 0.5)
}

fn signals_for(t: &Transcript) -> Signals {
    let step = 0.5;
    let n = (t.duration / step).ceil() as usize;
    Signals {
        loudness_db: (0..n)
            .map(|i| match i % 7 {
                0 => -70.0,
                1 | 4 => -16.0,
                2 => -31.0,
                _ => -22.0,
            })
            .collect(),
        loudness_step: step,
        scene_changes: (1..(t.duration / 13.0) as usize)
            .map(|k| k as f64 * 13.0)
            .rev()
            .collect(),
    }
}

fn assert_valid(t: &Transcript, clips: &[Candidate], range: (f64, f64), max_clips: usize) {
    assert!(clips.len() <= max_clips);
    for c in clips {
        let len = c.end - c.start;
        assert!(
            len >= range.0 && len <= range.1,
            "length {len} outside {range:?}"
        );
        assert!(c.score <= 100);
        assert!(c.first_word < c.end_word && c.end_word <= t.words.len());
        // Whole sentences.
        assert!(t.sentences.iter().any(|s| s.first_word == c.first_word));
        assert!(t.sentences.iter().any(|s| s.end_word == c.end_word));
        // Never mid-word, and exactly the clip's words inside it.
        for w in &t.words {
            assert!(
                !(w.start < c.start && c.start < w.end),
                "start {} cuts {w:?}",
                c.start
            );
            assert!(
                !(w.start < c.end && c.end < w.end),
                "end {} cuts {w:?}",
                c.end
            );
        }
        assert!(c.start <= t.words[c.first_word].start);
        assert!(c.end >= t.words[c.end_word - 1].end);
        assert!(c.start >= t.words[c.first_word].start - PAD_BEFORE - 1e-9);
        assert!(c.end <= t.words[c.end_word - 1].end + PAD_AFTER + 1e-9);
        assert_eq!(
            t.words_in(c.start, c.end),
            &t.words[c.first_word..c.end_word]
        );
        assert!(!c.title.is_empty() && c.title.chars().count() <= MAX_TITLE_CHARS);
    }
    for (i, a) in clips.iter().enumerate() {
        for b in &clips[i + 1..] {
            assert!(a.end <= b.start || b.end <= a.start, "{a:?} overlaps {b:?}");
        }
    }
    for pair in clips.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        assert!(a.score > b.score || (a.score == b.score && a.start <= b.start));
    }
}

#[test]
fn preset_ranges() {
    assert_eq!(preset_range("auto"), Some((20.0, 60.0)));
    assert_eq!(preset_range("15-30"), Some((15.0, 30.0)));
    assert_eq!(preset_range("30-60"), Some((30.0, 60.0)));
    assert_eq!(preset_range("60-90"), Some((60.0, 90.0)));
    assert_eq!(preset_range("90-120"), None);
    assert_eq!(preset_range(""), None);
    assert_eq!(preset_range("AUTO"), None);
}

#[test]
fn clips_are_whole_sentences_inside_the_range_and_disjoint() {
    let t = long_talk(6);
    let signals = signals_for(&t);
    for name in ["auto", "15-30", "30-60", "60-90"] {
        let range = preset_range(name).unwrap();
        let clips = select_clips(&t, &signals, range, 8);
        assert!(!clips.is_empty(), "no clips for {name}");
        assert_valid(&t, &clips, range, 8);
    }
}

#[test]
fn selection_is_deterministic() {
    let t = long_talk(5);
    let signals = signals_for(&t);
    let a = select_clips(&t, &signals, (20.0, 60.0), 10);
    let b = select_clips(&t, &signals, (20.0, 60.0), 10);
    assert_eq!(a, b);
    assert_eq!(
        serde_json::to_string(&a).unwrap(),
        serde_json::to_string(&b).unwrap()
    );
}

#[test]
fn respects_max_clips_and_empty_inputs() {
    let t = long_talk(4);
    assert!(select_clips(&t, &Signals::default(), (20.0, 60.0), 0).is_empty());
    assert_eq!(
        select_clips(&t, &Signals::default(), (15.0, 30.0), 2).len(),
        2
    );
    assert!(select_clips(&Transcript::default(), &Signals::default(), (20.0, 60.0), 5).is_empty());
    assert!(select_clips(&t, &Signals::default(), (60.0, 20.0), 5).is_empty());
    // Nothing is long enough.
    let short = transcript(&["Just one line."], 2.5, 0.2);
    assert!(select_clips(&short, &Signals::default(), (20.0, 60.0), 5).is_empty());
}

#[test]
fn padding_stays_in_silence() {
    let mut t = transcript(
        &["One two three four five.", "Six seven eight nine ten."],
        2.5,
        0.6,
    );
    t.duration = t.words.last().unwrap().end + 0.1;
    let clips = select_clips(&t, &Signals::default(), (1.0, 10.0), 5);
    let first = clips
        .iter()
        .find(|c| c.first_word == 0)
        .expect("a clip at the start");
    // Starts within PAD_BEFORE, never below zero.
    assert!((first.start - (t.words[0].start - PAD_BEFORE)).abs() < 1e-9);
    let last = clips
        .iter()
        .find(|c| c.end_word == t.words.len())
        .expect("a clip at the end");
    // The media ends 0.1 s after the last word.
    assert!((last.end - t.duration).abs() < 1e-9);
    for c in &clips {
        assert!(c.start >= 0.0);
    }
}

#[test]
fn hooky_lively_span_beats_flat_monotone_one() {
    let hooky = [
        "Why do most people never finish what they start?",
        "Here's the secret!",
        "You only need three minutes a day.",
        "Seriously, it's the best trick I know.",
        "Want to see it actually work?",
        "Watch this.",
        "It changed everything for me.",
        "And it will for you too!",
    ];
    let flat = [
        "the committee reviewed the quarterly figures for the regional office",
        "then the minutes were approved and filed with the secretary",
        "the next item concerned the parking arrangements for the building",
        "members noted the schedule and agreed to revisit the matter later",
    ];
    let mut words = transcript(&hooky, 3.0, 0.4).words;
    let offset = words.last().unwrap().end + 2.0;
    let flat_t = transcript(&flat, 1.3, 1.5);
    let flat_start = offset + flat_t.words[0].start;
    words.extend(flat_t.words.into_iter().map(|w| Word {
        start: w.start + offset,
        end: w.end + offset,
        ..w
    }));
    let duration = words.last().unwrap().end + 1.0;
    let t = Transcript {
        language: "en".into(),
        duration,
        sentences: sentences_from_words(&words),
        words,
    };
    let step = 0.5;
    let loudness_db = (0..(duration / step).ceil() as usize)
        .map(|i| {
            if (i as f64) * step < flat_start {
                [-14.0, -27.0, -19.0, -33.0][i % 4]
            } else {
                -25.0 + 0.2 * (i % 2) as f32
            }
        })
        .collect();
    let signals = Signals {
        loudness_db,
        loudness_step: step,
        scene_changes: vec![4.0, 9.5],
    };

    for signals in [Signals::default(), signals] {
        let clips = select_clips(&t, &signals, (10.0, 30.0), 20);
        assert_valid(&t, &clips, (10.0, 30.0), 20);
        let best_hooky = clips
            .iter()
            .filter(|c| c.end <= flat_start)
            .map(|c| c.score)
            .max();
        let best_flat = clips
            .iter()
            .filter(|c| c.start >= flat_start - 2.0)
            .map(|c| c.score)
            .max();
        let (best_hooky, best_flat) = (
            best_hooky.expect("a hooky clip"),
            best_flat.expect("a flat clip"),
        );
        assert!(
            best_hooky > best_flat + 20,
            "hooky {best_hooky} vs flat {best_flat}"
        );
        assert!(clips[0].end <= flat_start);
    }
}

#[test]
fn connective_start_is_penalised() {
    let clean = [
        "This is the mistake.",
        "It costs you time.",
        "Fix it early.",
        "Then relax.",
    ];
    let dangling = [
        "But this is the mistake.",
        "It costs you time.",
        "Fix it early.",
        "Then relax.",
    ];
    let score_of = |sentences: &[&str]| {
        let t = transcript(sentences, 2.6, 0.5);
        let clips = select_clips(&t, &Signals::default(), (6.0, 20.0), 1);
        let clip = clips.into_iter().next().expect("one clip");
        assert_eq!((clip.first_word, clip.end_word), (0, t.words.len()));
        clip
    };
    let a = score_of(&clean);
    let b = score_of(&dangling);
    assert_eq!(a.breakdown.completeness, 1.0);
    assert_eq!(b.breakdown.completeness, 0.5);
    assert!(a.score > b.score, "{} vs {}", a.score, b.score);
}

#[test]
fn unfinished_ending_is_penalised() {
    let t = transcript(&["Here is the whole idea.", "It works"], 2.6, 0.5);
    let f = SentenceFeatures::new(&t.sentences[1], &t.words).unwrap();
    assert!(!f.terminal);
    let clips = select_clips(&t, &Signals::default(), (1.0, 10.0), 3);
    let ending = clips
        .iter()
        .find(|c| c.end_word == t.words.len())
        .expect("a clip at the end");
    assert_eq!(ending.breakdown.completeness, 0.5);
}

#[test]
fn features_behave() {
    assert!(hook_strength("Why do you keep failing?") > hook_strength("The weather was mild."));
    assert!(hook_strength("So here's why 3 habits matter.") >= 0.65);
    assert_eq!(speech_rate_score(0.8), 0.0);
    assert_eq!(speech_rate_score(3.0), 1.0);
    assert!(speech_rate_score(6.0) < 1.0);
    let loud = LoudnessIndex::new(&Signals {
        loudness_db: vec![-80.0, -20.0, -30.0, -20.0, -30.0, f32::NAN],
        loudness_step: 1.0,
        scene_changes: vec![],
    });
    let std = loud.variation(0.0, 6.0).unwrap();
    assert!((std - 5.0).abs() < 1e-6, "{std}");
    assert_eq!(loud.variation(0.0, 2.0), None);
    let scenes = SceneIndex::new(&[30.0, f64::NAN, 10.0, 10.0, 50.0]);
    assert!((scenes.per_minute(0.0, 60.0) - 3.0).abs() < 1e-9);
    assert_eq!(scenes.per_minute(10.0, 30.0), 0.0);
}

#[test]
fn invalid_word_ranges_are_skipped() {
    let mut t = long_talk(2);
    let broken = t.sentences.len() / 2;
    t.sentences[broken].end_word = t.words.len() + 10;
    let clips = select_clips(&t, &Signals::default(), (10.0, 40.0), 10);
    assert!(!clips.is_empty());
    let bad = &t.sentences[broken];
    for c in &clips {
        assert!(c.end_word <= bad.first_word || c.first_word >= t.sentences[broken + 1].first_word);
    }
}

#[test]
fn two_hour_transcript_is_fast_enough() {
    let t = long_talk(170); // ~2,000 sentences, ~2 hours
    assert!(t.sentences.len() >= 2000 && t.duration > 5000.0);
    let signals = signals_for(&t);
    let started = std::time::Instant::now();
    let clips = select_clips(&t, &signals, (60.0, 90.0), 20);
    assert_eq!(clips.len(), 20);
    assert_valid(&t, &clips, (60.0, 90.0), 20);
    assert!(started.elapsed().as_secs() < 20);
}

#[test]
fn score_span_scores_a_given_range() {
    let t = long_talk(2);
    let signals = signals_for(&t);
    let whole = score_span(&t, &signals, 0, t.sentences.len(), 0.0, t.duration);
    assert_eq!((whole.first_word, whole.end_word), (0, t.words.len()));
    assert_eq!((whole.start, whole.end), (0.0, t.duration));
    assert_eq!(whole.title, "Why do most people fail at this?");
    assert!(whole.score > 0);

    // Same features as select_clips for the same span.
    let clip = &select_clips(&t, &signals, (20.0, 60.0), 1)[0];
    let first = t
        .sentences
        .iter()
        .position(|s| s.first_word == clip.first_word)
        .unwrap();
    let end = t
        .sentences
        .iter()
        .position(|s| s.end_word == clip.end_word)
        .unwrap()
        + 1;
    let same = score_span(&t, &signals, first, end, clip.start, clip.end);
    assert_eq!(same.breakdown, clip.breakdown);
    assert_eq!(same.title, clip.title);
    assert_eq!(
        (same.first_word, same.end_word),
        (clip.first_word, clip.end_word)
    );

    // Nothing usable: score 0, no title, no panic.
    let empty = score_span(&Transcript::default(), &signals, 0, 0, 0.0, 10.0);
    assert_eq!(
        (empty.score, empty.title.as_str(), empty.end_word),
        (0, "", 0)
    );
    assert_eq!(score_span(&t, &signals, 5, 2, 0.0, 10.0).score, 0);
    assert_eq!(
        score_span(&t, &signals, 0, usize::MAX, 0.0, t.duration),
        whole
    );
}

#[test]
fn titles_are_short_whole_words() {
    let long = "Honestly the single most important lesson about compounding interest is that patience beats intelligence, every time.";
    let title = make_title(&[long]);
    assert!(title.chars().count() <= MAX_TITLE_CHARS, "{title}");
    let source: Vec<&str> = long.split_whitespace().collect();
    let got: Vec<&str> = title.split_whitespace().collect();
    assert!(got.len() < source.len());
    for (i, w) in got.iter().enumerate() {
        let src = source[i].trim_end_matches(|c: char| !c.is_alphanumeric());
        assert!(
            w.eq_ignore_ascii_case(source[i]) || w.eq_ignore_ascii_case(src),
            "{w} vs {}",
            source[i]
        );
    }
    assert!(title.ends_with(char::is_alphanumeric));
    assert!(!title.ends_with(" that") && !title.ends_with(" is"));
}

#[test]
fn titles_prefer_hooks_and_clean_up() {
    assert_eq!(
        make_title(&[
            "We covered a lot of ground today.",
            "Why do most startups fail?"
        ]),
        "Why do most startups fail?"
    );
    assert_eq!(
        make_title(&["so here's why it works.", "Right."]),
        "Here's why it works"
    );
    assert_eq!(make_title(&["“the end,”"]), "“The end");
    assert_eq!(
        make_title(&["Stop doing this!", "Another", "Why? Why? Why?"]),
        "Stop doing this!"
    );
    assert_eq!(make_title(&["But."]), "But");
    assert_eq!(make_title(&[]), "");
    assert_eq!(make_title(&["", "  "]), "");
    let huge = "x".repeat(100);
    assert_eq!(make_title(&[&huge]).chars().count(), MAX_TITLE_CHARS);
    let wide = "éé ".repeat(40);
    let title = make_title(&[&wide]);
    assert!(title.chars().count() <= MAX_TITLE_CHARS && title.starts_with("Éé éé"));
}
