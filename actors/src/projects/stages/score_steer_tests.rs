//! Steering tests of `score.rs`: a prompt moves the chosen clips onto its
//! topic (the shared talk fixtures are the parent test module's).

use super::*;

#[test]
fn a_prompt_steers_selection_and_explains_it() {
    let sentences: Vec<&str> = TIDES.iter().chain(COOKING).copied().collect();
    let t = transcript(&sentences, 2.6, 0.4);
    let plain = select_clips(&t, &Signals::default(), (10.0, 25.0), 1);
    let prompt = steer::Prompt::parse("the part about cooking pasta and tomato sauce").unwrap();
    let steered = select_clips_steered(&t, &Signals::default(), (10.0, 25.0), 1, Some(&prompt));
    let cooking_start = t.sentences[TIDES.len()].first_word;
    // Without the prompt the tides clip wins; with it, a cooking one.
    assert!(plain[0].first_word < cooking_start, "{plain:?}");
    assert!(steered[0].first_word >= cooking_start, "{steered:?}");
    let s = &steered[0];
    assert!(s.scores.prompt_match.unwrap() >= 50, "{:?}", s.scores);
    assert!(
        s.reason.starts_with("Matches your prompt on "),
        "{}",
        s.reason
    );
    assert!(
        s.reason.contains("“pasta”") || s.reason.contains("“sauce”"),
        "{}",
        s.reason
    );
    assert_eq!(plain[0].scores.prompt_match, None);
    assert!(!plain[0].reason.contains("prompt"), "{}", plain[0].reason);
    // Sub-scores are the breakdown in percent.
    assert_eq!(s.scores.hook, (s.breakdown.hook * 100.0).round() as u8);
    assert_eq!(
        s.scores.completeness,
        (s.breakdown.completeness * 100.0).round() as u8
    );
}

/// Issue 28 item 8: the prompt's topic in the middle of a talk, right
/// after a strong hook. Re-scoring alone (the prompt blended into each
/// clip's score) made the hook plus the passage's first sentence the best
/// clip and left the rest of the passage to the next one, or cut it off;
/// now the first clip holds the passage whole, at every clip length.
#[test]
fn a_prompt_about_the_middle_of_a_talk_gets_a_clip_holding_it_whole() {
    const SAUCE: &[&str] = &[
        "The tomato sauce starts with garlic and good olive oil.",
        "Simmer the tomato sauce slowly while the water boils.",
        "Taste the sauce and add a pinch of salt.",
    ];
    let sentences: Vec<&str> = TIDES[..4]
        .iter()
        .chain(&TALK[..2])
        .chain(SAUCE)
        .chain(&TIDES[4..])
        .copied()
        .collect();
    let t = transcript(&sentences, 2.6, 0.4);
    let (from, to) = (t.sentences[6].first_word, t.sentences[8].end_word);
    let holds = |c: &Candidate| c.first_word <= from && to <= c.end_word;
    let ranges = |cs: &[Candidate]| {
        cs.iter()
            .map(|c| (c.first_word, c.end_word))
            .collect::<Vec<_>>()
    };
    let prompt = steer::Prompt::parse("the bit about the tomato sauce").unwrap();
    for range in [(8.0, 13.0), (10.0, 16.0), (12.0, 20.0)] {
        let plain = select_clips(&t, &Signals::default(), range, 3);
        let steered = select_clips_steered(&t, &Signals::default(), range, 3, Some(&prompt));
        assert!(!plain.iter().any(holds), "{range:?}: {:?}", ranges(&plain));
        assert!(
            holds(&steered[0]),
            "{range:?}: {:?} (passage: words {from}..{to})",
            ranges(&steered)
        );
        assert!(
            steered[0].reason.starts_with("Matches your prompt on "),
            "{}",
            steered[0].reason
        );
    }
}
