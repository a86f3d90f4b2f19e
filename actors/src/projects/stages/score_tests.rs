//! Tests of `score`.

use super::*;
use crate::projects::stages::{lexicon, steer};
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
        language_probability: None,
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

/// `n` sentences of made-up words that never repeat a sentence (so no
/// two clips are near-duplicates), deterministic.
fn varied_talk(n: usize) -> Transcript {
    const SYLLABLES: &[&str] = &[
        "ba", "ko", "mi", "ru", "se", "ta", "lo", "ne", "vi", "da", "pe", "zu", "fa", "go", "hi",
    ];
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |m: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % m as u64) as usize
    };
    let sentences: Vec<String> = (0..n)
        .map(|_| {
            let len = 8 + next(7);
            // Two-syllable words: a 225-word vocabulary, so the subject
            // never changes (no vocabulary boundaries).
            let words: Vec<String> = (0..len)
                .map(|_| (0..2).map(|_| SYLLABLES[next(SYLLABLES.len())]).collect())
                .collect();
            format!("{}.", words.join(" "))
        })
        .collect();
    let refs: Vec<&str> = sentences.iter().map(String::as_str).collect();
    transcript(&refs, 2.8, 0.5)
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
    // Slow, but with pauses under a topic boundary's 1.5 s.
    let flat_t = transcript(&flat, 1.3, 1.2);
    let flat_start = offset + flat_t.words[0].start;
    words.extend(flat_t.words.into_iter().map(|w| Word {
        start: w.start + offset,
        end: w.end + offset,
        ..w
    }));
    let duration = words.last().unwrap().end + 1.0;
    let t = Transcript {
        language: "en".into(),
        language_probability: None,
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
fn unfinished_ending_is_penalised() {
    let t = transcript(&["Here is the whole idea.", "It works"], 2.6, 0.5);
    let f = SentenceFeatures::new(&t.sentences[1], &t.words, None).unwrap();
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
    let t = varied_talk(2000); // ~2,000 sentences, ~2 hours
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
    let whole = score_span(&t, &signals, 0, t.sentences.len(), 0.0, t.duration, None);
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
    let same = score_span(&t, &signals, first, end, clip.start, clip.end, None);
    assert_eq!(same.breakdown, clip.breakdown);
    assert_eq!(same.title, clip.title);
    assert_eq!(
        (same.first_word, same.end_word),
        (clip.first_word, clip.end_word)
    );

    // Nothing usable: score 0, no title, no panic.
    let empty = score_span(&Transcript::default(), &signals, 0, 0, 0.0, 10.0, None);
    assert_eq!(
        (empty.score, empty.title.as_str(), empty.end_word),
        (0, "", 0)
    );
    assert_eq!(score_span(&t, &signals, 5, 2, 0.0, 10.0, None).score, 0);
    assert_eq!(
        score_span(&t, &signals, 0, usize::MAX, 0.0, t.duration, None),
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

/// Sentences about one subject, for steering and boundary tests.
const COOKING: &[&str] = &[
    "Fresh pasta needs flour, eggs and a little patience.",
    "Knead the dough until it feels smooth and elastic.",
    "Let the dough rest under a towel for half an hour.",
    "Roll it thin and cut it into wide ribbons.",
    "The tomato sauce starts with garlic and good olive oil.",
    "Simmer the tomato sauce slowly while the water boils.",
    "Salt the pasta water generously before the pasta goes in.",
    "Toss the pasta in the sauce and serve it at once.",
];
const TIDES: &[&str] = &[
    "Ocean tides follow the pull of the moon on the seas.",
    "The moon drags a bulge of seawater around the planet.",
    "Coastal towns see a high tide twice in each lunar day.",
    "Spring tides happen when the sun and the moon line up.",
    "Neap tides are weaker because the sun pulls sideways.",
    "Sailors read tide tables before leaving the harbour.",
    "Strong currents form where tides squeeze through narrow straits.",
    "Some bays see the sea level change by fifteen metres.",
];

#[test]
fn near_duplicate_clips_are_dropped() {
    // The best passage said twice, with flat talk between: without the
    // near-duplicate rule the two copies would be the two best clips.
    const FLAT: &[&str] = &[
        "the committee reviewed the quarterly figures for the regional office.",
        "then the minutes were approved and filed with the secretary.",
        "the next item concerned the parking arrangements for the building.",
        "members noted the schedule and agreed to revisit the matter later.",
    ];
    let hook = &TALK[..3];
    let sentences: Vec<&str> = hook.iter().chain(FLAT).chain(hook).copied().collect();
    let t = transcript(&sentences, 2.8, 0.5);
    let copies = [0, t.sentences[hook.len() + FLAT.len()].first_word];
    let clips = select_clips(&t, &Signals::default(), (5.0, 12.0), 3);
    assert!(clips.len() >= 2, "{clips:?}");
    let on_copy = clips
        .iter()
        .filter(|c| copies.contains(&c.first_word))
        .count();
    assert_eq!(on_copy, 1, "{clips:#?}");
    for (i, a) in clips.iter().enumerate() {
        for b in &clips[i + 1..] {
            let (sa, sb) = (
                lexicon::shingles(&a.text(&t), 3),
                lexicon::shingles(&b.text(&t), 3),
            );
            let shared = sa.intersection(&sb).count() as f64 / sa.len().min(sb.len()) as f64;
            assert!(
                shared < NEAR_DUPLICATE_SHARE,
                "{} / {}",
                a.text(&t),
                b.text(&t)
            );
        }
    }
}

#[test]
fn clips_do_not_cross_a_change_of_subject() {
    // Two unrelated recordings joined: the join is a topic boundary.
    let sentences: Vec<&str> = COOKING.iter().chain(TIDES).copied().collect();
    let t = transcript(&sentences, 2.6, 0.4);
    let join = t.sentences[COOKING.len()].first_word;
    let join_at = t.words[join].start;
    let clips = select_clips(&t, &Signals::default(), (8.0, 40.0), 10);
    assert!(clips.len() >= 2, "{clips:?}");
    for c in &clips {
        assert!(
            c.end_word <= join || c.first_word >= join,
            "{c:?} crosses the join at word {join}"
        );
        assert!(c.end <= join_at || c.start >= t.words[join - 1].end);
    }
    // Too short to fit between boundaries: they are ignored rather than
    // making no clip.
    let one = select_clips(&t, &Signals::default(), (50.0, 80.0), 1);
    assert_eq!(one.len(), 1);
}

#[path = "score_steer_tests.rs"]
mod steer_tests;

#[path = "score_opening_tests.rs"]
mod opening_tests;

/// Issue 28, the debate with `--preset 15-30`: the best-hooked start (a
/// question) follows another voice's "all right." with no pause, so no cut
/// before it is quiet; the clip from the start of the speech is taken.
#[test]
fn a_clip_does_not_open_inside_crosstalk() {
    let sentences = [
        "And so the election is all right.",
        "Why is it on the ballot?",
        "Because the court decided it last year and nobody asked the voters.",
        "It is on the ballot and the court knows exactly why it is there.",
    ];
    let mut t = transcript(&sentences, 2.8, 0.5);
    let first = t.sentences[1].first_word;
    let shift = t.words[first].start - t.words[first - 1].end;
    for w in &mut t.words[first..] {
        w.start -= shift;
        w.end -= shift;
    }
    t.sentences = sentences_from_words(&t.words);
    let from_question = t.words.last().unwrap().end - t.words[first].start;
    let range = (from_question, from_question + 5.0);
    let clips = select_clips(&t, &Signals::default(), range, 1);
    assert_eq!(clips.len(), 1, "{clips:?}");
    assert_eq!(clips[0].first_word, 0, "{clips:?}");
    // Without the crosstalk, the question opens the clip.
    let t = transcript(&sentences, 2.8, 0.5);
    let clips = select_clips(&t, &Signals::default(), range, 1);
    assert_eq!(clips[0].first_word, t.sentences[1].first_word, "{clips:?}");
}
