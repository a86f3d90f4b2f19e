//! How a clip opens (tests of `score.rs`): a dangling connective is
//! penalised, an opener that names the topic is a hook (the shared
//! `transcript` helper is the parent test module's).

use super::*;

#[test]
fn connective_start_is_penalised() {
    let clean = [
        "We met at noon.",
        "This is the mistake.",
        "It costs you time.",
        "Fix it early.",
        "Then relax.",
    ];
    let dangling = [
        "We met at noon.",
        "But this is the mistake.",
        "It costs you time.",
        "Fix it early.",
        "Then relax.",
    ];
    // The span of the last four sentences.
    let score_of = |sentences: &[&str]| {
        let t = transcript(sentences, 2.6, 0.5);
        let (start, end) = (t.sentences[1].start, t.sentences[4].end);
        score_span(&t, &Signals::default(), 1, 5, start, end, None)
    };
    let a = score_of(&clean);
    let b = score_of(&dangling);
    assert_eq!(a.breakdown.completeness, 1.0);
    assert_eq!(b.breakdown.completeness, 0.5);
    assert!(a.score > b.score, "{} vs {}", a.score, b.score);
    // The talk's first sentence leans on nothing: not a dangling start.
    let t = transcript(&dangling[1..], 2.6, 0.5);
    let first = SentenceFeatures::new(&t.sentences[0], &t.words, None).unwrap();
    assert!(!first.connective_start);
}

/// A talk that opens by naming its topic ("So let's talk about
/// Anaconda.", the talk show of the real-footage corpus) has its hook at
/// the start: the clip begins there, not one sentence later.
#[test]
fn an_opener_that_names_the_topic_starts_the_clip() {
    assert!(
        hook_strength("So let's talk about Anaconda.")
            > hook_strength("All of your songs are hugely successful.")
    );
    let t = transcript(
        &[
            "So let's talk about Anaconda.",
            "All of your songs are hugely successful.",
            "Super bass was hugely successful.",
            "But this hasn't even been out that long.",
            "It's 115 million or something.",
            "115 million views.",
            "And just under two weeks or something.",
            "I don't know how that happened.",
            "I really don't know how that happened.",
        ],
        2.6,
        0.3,
    );
    let clips = select_clips(&t, &Signals::default(), (17.0, 22.0), 1);
    assert_eq!(clips.len(), 1, "{clips:?}");
    assert_eq!(clips[0].first_word, 0, "{:?}", clips[0]);
}
