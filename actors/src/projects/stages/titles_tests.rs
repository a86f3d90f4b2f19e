//! Tests of `titles.rs` (clip headlines).

use super::*;
use crate::projects::stages::phrase::{complete_en, DANGLING};

#[test]
fn the_issue_fragment_becomes_a_complete_clause() {
    // The real two-minute talk of issue 15 gave the fragment "That might
    // seem a bit surprising because my full-time work".
    let title = make_title(&[
        "That might seem a bit surprising because my full-time work is in software engineering, not in video.",
    ]);
    assert_eq!(title, "That might seem a bit surprising");
}

#[test]
fn longest_fitting_run_of_clauses_without_a_dangling_end() {
    assert_eq!(
        make_title(&[
            "If you want to grow, post every day, and answer every single comment you get."
        ]),
        "If you want to grow, post every day"
    );
    // Ends on a clause, not on "my" or "and".
    let t = make_title(&[
        "We tried it for a year, and my team and I learned more than in the ten years before that.",
    ]);
    assert_eq!(t, "We tried it for a year");
    // A whole sentence that fits is kept as it is (minus the full stop).
    assert_eq!(
        make_title(&["Salt the water before the pasta goes in."]),
        "Salt the water before the pasta goes in"
    );
}

#[test]
fn never_ends_on_a_conjunction_or_preposition() {
    for s in [
        "The reason this works so well for beginners is simple because it builds on habits you already have.",
        "Most creators give up after a month, but the ones who stay for a year grow ten times faster than the rest.",
    ] {
        let t = make_title(&[s]);
        let last = normalize(t.rsplit(' ').next().unwrap());
        assert!(!DANGLING.contains(&last.as_str()), "{t}");
        assert!(t.chars().count() <= MAX_TITLE_CHARS && !t.ends_with(','), "{t}");
    }
}

/// The last word of a title, normalised.
fn last_word(title: &str) -> String {
    normalize(title.rsplit(' ').next().unwrap_or_default())
}

#[test]
fn a_clause_cut_before_its_verb_is_no_title() {
    // Issue 28: a pause split "Of course, I hope that six years as Prime
    // Minister | have given me …" and the first half became the title.
    let fragment = "Of course, I hope that six years as Prime Minister";
    assert_ne!(make_title(&[fragment]), fragment);
    let clip = [
        fragment,
        "have given me the experience to lead this country again.",
        "The question is whether voters still trust us.",
    ];
    assert_eq!(
        make_title(&clip),
        "The question is whether voters still trust us"
    );
    // Each check on its own: an open "that" clause, a verb without a subject,
    // a clause ending on a bare auxiliary, "but" before its verb.
    assert!(!complete_en(
        &fragment.split(' ').collect::<Vec<_>>(),
        false
    ));
    let subjectless = "have given me the experience to lead this country again.";
    assert!(!complete_en(
        &subjectless.split(' ').collect::<Vec<_>>(),
        true
    ));
    assert_eq!(
        make_title(&[
            "You are currently inside the studio where you can edit your video and your captions."
        ]),
        "You are currently inside the studio"
    );
    assert_eq!(
        make_title(&["Most creators give up after a month, but the ones who stay for a year grow ten times faster than the rest."]),
        "Most creators give up after a month"
    );
    // A whole sentence the speaker ended may be a noun phrase; a piece of one may not.
    assert_eq!(
        make_title(&["The biggest mistake of my career."]),
        "The biggest mistake of my career"
    );
    assert_eq!(
        make_title(&["On the court.", "Nobody saw the ruling coming."]),
        "Nobody saw the ruling coming"
    );
}

#[test]
fn never_ends_on_an_adjective_missing_its_noun() {
    // Issue 28: "There wasn't a perfect" (the sentence's last word was lost).
    for clip in [
        &[
            "There wasn't a perfect",
            "Every plan we made had a flaw somewhere.",
        ][..],
        &[
            "Every plan we made had a flaw somewhere.",
            "There wasn't a perfect",
        ][..],
        &[
            "It was a really good",
            "Every plan we made had a flaw somewhere.",
        ][..],
    ] {
        assert_eq!(make_title(clip), "Every plan we made had a flaw somewhere");
    }
    // Even as the last resort.
    for fragment in [
        "There wasn't a perfect",
        "We bought the most expensive",
        "It is a beautiful",
    ] {
        let title = make_title(&[fragment]);
        let last = last_word(&title);
        assert!(
            !["perfect", "a", "the", "expensive", "beautiful"].contains(&last.as_str()),
            "{fragment} -> {title}"
        );
    }
    // A superlative after "the" and a predicative adjective are whole.
    assert_eq!(make_title(&["You are the best."]), "You are the best");
    assert_eq!(
        make_title(&["The soup was perfect."]),
        "The soup was perfect"
    );
}

#[test]
fn the_strongest_sentence_not_the_first() {
    // Before: only the first two sentences were read ("We looked at four
    // hundred companies").
    let clip = [
        "Let me start with some background.",
        "We looked at four hundred companies.",
        "Some of them were small.",
        "Why do most startups fail in their first year?",
        "It comes down to cash.",
    ];
    assert_eq!(
        make_title(&clip),
        "Why do most startups fail in their first year?"
    );
    // Ties go to the earlier sentence; a sentence that says nothing ("I don't
    // think so.") or repeats itself ("Why? Why? Why?") is no headline.
    assert_eq!(
        make_title(&[
            "I don't think so.",
            "Salt the water early.",
            "Boil it hard."
        ]),
        "Salt the water early"
    );
}

#[test]
fn chinese_titles_are_at_most_thirty_characters_cut_at_punctuation() {
    // Issue 28: on the Mandarin lecture the title was a whole 60-character sentence.
    let sentence = "我们今天要讨论的是人工智能的未来发展，这个问题其实比大家想象的要复杂得多，因为它同时涉及到技术、伦理和法律三个方面的问题。";
    assert!(sentence.chars().count() > 55);
    let title = make_title(&[sentence]);
    assert_eq!(title, "我们今天要讨论的是人工智能的未来发展");
    assert!(title_width(&title) <= MAX_TITLE_CHARS && title.chars().count() <= 30);
    assert_eq!(title_width("中文 ab"), 7);
    assert_eq!(title_width("정말 좋아요"), 11);

    // Without punctuation (as Whisper often writes Chinese): clause
    // boundaries before connectives; a question in the sentence wins; the
    // title is made of whole words.
    let words = [
        "接下来",
        "我",
        "给",
        "大家",
        "展示",
        "一个",
        "毫无",
        "意义",
        "的",
        "功能",
        "这个",
        "功能",
        "就是",
        "用",
        "ChatGPT",
        "玩",
        "文字",
        "冒险",
        "游戏",
        "所以",
        "不是",
        "我",
        "自己",
        "发现",
        "的",
        "那",
        "什么",
        "是",
        "文字",
        "冒险",
        "游戏",
        "呢?",
    ];
    let title = make_title_words("zh", &[words.to_vec()]);
    assert_eq!(title, "什么是文字冒险游戏呢?");
    let title = make_title_words("zh", &[words[..25].to_vec()]);
    assert!(title_width(&title) <= MAX_TITLE_CHARS, "{title}");
    assert!(!title.ends_with('的') || title.contains('是'), "{title}");
    // Whole words only: the title is a run of consecutive words.
    let joined: Vec<String> = (0..25)
        .flat_map(|a| (a + 1..=25).map(move |b| words[a..b].concat()))
        .collect();
    assert!(joined.contains(&title), "{title}");
    // Never longer than 30 characters, even with no boundary at all.
    let run_on = "我们今天要讨论的是人工智能的未来发展这个问题其实比大家想象的要复杂得多";
    let title = make_title(&[run_on]);
    assert!(
        title.chars().count() <= 30 && run_on.starts_with(&title),
        "{title}"
    );
}

#[test]
fn korean_titles_end_on_a_predicate() {
    // The Korean interview's title was 70 characters wide and ended on "여름은".
    let sentence = "일단 먼저 잠을 충분히 자고 여행도 하고 맛있는 것도 먹으러 다니고 정말 여름을 그렇게 보내고 싶습니다";
    let title = make_title(&[sentence]);
    // The widest run of clauses that ends where the sentence does (60 wide).
    assert_eq!(
        title,
        "맛있는 것도 먹으러 다니고 정말 여름을 그렇게 보내고 싶습니다"
    );
    assert!(title_width(&title) <= MAX_TITLE_CHARS);
    let words: Vec<&str> = sentence.split(' ').collect();
    assert_eq!(make_title_words("ko", &[words]), title);
    // A short Korean sentence is kept whole.
    assert_eq!(
        make_title(&["이 영화는 정말 재미있어요."]),
        "이 영화는 정말 재미있어요"
    );
}

#[test]
fn complete_short_sentences_stay_whole() {
    // What the fragment rules must not catch: a pronoun "that", "a while",
    // a final particle or auxiliary the speaker ended on, a question.
    for sentence in [
        "What is that new feature?",
        "Is this real?",
        "It takes a while.",
        "Yes we can.",
        "What are you waiting for?",
        "Nobody saw it coming.",
        "Voters still trust the process.",
        "When did it start?",
    ] {
        let want = sentence.trim_end_matches('.');
        assert_eq!(make_title(&[sentence]), want);
    }
}
