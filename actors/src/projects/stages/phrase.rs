//! The language-specific half of a headline (`titles.rs`): where a
//! sentence's clauses begin, which leading words a title drops, which words
//! it never ends on, whether an English run of words is a complete phrase,
//! and how wide text is on screen.
//!
//! English gets a small grammar: a title has a verb (or is a whole sentence
//! the speaker ended, which may be a noun phrase), every clause opened by a
//! subordinating word ("that", "because", "where", …) has its own verb, and
//! it never ends on a determiner, an adjective missing its noun ("a
//! perfect") or a bare auxiliary ("where you can"). Chinese and Japanese
//! clauses end at 、，。：；！？ or before a connective (所以, 但是, 那, …);
//! Korean clauses end after a connective verb ending (-고, -서, -는데, …),
//! and a Korean or Japanese title ends where a predicate ends. Other
//! languages only get punctuation and the word lists that were always used.

use super::lexicon::{normalize, CONNECTIVES, FILLERS};

/// How the words of a sentence are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    En,
    Zh,
    Ja,
    Ko,
    Other,
}

impl Lang {
    /// The language of an ISO code; an empty code is guessed from the
    /// script of `sample` (Hangul, kana, Han, else English).
    pub fn of(code: &str, sample: &str) -> Lang {
        let base = code.split(['-', '_']).next().unwrap_or("");
        match base.to_ascii_lowercase().as_str() {
            "en" => Lang::En,
            "zh" | "yue" => Lang::Zh,
            "ja" => Lang::Ja,
            "ko" => Lang::Ko,
            "" => {
                let has = |f: fn(u32) -> bool| sample.chars().any(|c| f(c as u32));
                if has(|c| (0xAC00..=0xD7A3).contains(&c) || (0x1100..=0x11FF).contains(&c)) {
                    Lang::Ko
                } else if has(|c| (0x3040..=0x30FF).contains(&c)) {
                    Lang::Ja
                } else if has(|c| (0x4E00..=0x9FFF).contains(&c) || (0x3400..=0x4DBF).contains(&c))
                {
                    Lang::Zh
                } else {
                    Lang::En
                }
            }
            _ => Lang::Other,
        }
    }

    /// Verb-final languages: a clause is complete where its predicate ends,
    /// at the end of the sentence.
    pub fn verb_final(self) -> bool {
        matches!(self, Lang::Ja | Lang::Ko)
    }
}

/// Is `c` about two Latin letters wide on screen (Han, kana, Hangul,
/// full-width forms)?
pub fn wide(c: char) -> bool {
    matches!(c as u32,
        0x1100..=0x115F
        | 0x2E80..=0x303E
        | 0x3041..=0x33FF
        | 0x3400..=0x4DBF
        | 0x4E00..=0x9FFF
        | 0xA960..=0xA97F
        | 0xAC00..=0xD7A3
        | 0xF900..=0xFAFF
        | 0xFE30..=0xFE4F
        | 0xFF00..=0xFF60
        | 0xFFE0..=0xFFE6
        | 0x20000..=0x3FFFD)
}

/// Width of `text` in Latin letters: a wide character counts two.
pub fn width(text: &str) -> usize {
    text.chars().map(|c| if wide(c) { 2 } else { 1 }).sum()
}

/// Words a title never ends on (any language: English words appear in all).
#[rustfmt::skip]
pub const DANGLING: &[&str] = &[
    "a", "an", "the", "and", "or", "but", "so", "of", "to", "in", "on", "at", "for", "with",
    "from", "by", "as", "that", "which", "is", "are", "was", "were", "my", "your", "our",
    "their", "its", "his", "because", "cause", "if", "when", "while", "although", "though",
    "unless", "whether", "nor", "about", "into", "onto", "than", "through", "without", "after",
    "before", "over", "under", "between", "i", "we", "you've", "i'm", "it's", "not", "every",
    "each", "whose", "very", "where", "there's", "that's", "what's", "you're", "we're",
    "they're", "i've", "we've", "they've", "i'll", "we'll", "you'll", "i'd", "gonna", "wanna",
    "gotta", "am", "be", "been", "being",
];

/// Auxiliaries a title ends on only when the speaker ended the sentence
/// there ("Yes we can." but not "…studio where you can").
#[rustfmt::skip]
const AUX_END: &[&str] = &[
    "can", "could", "will", "would", "should", "shall", "may", "might", "must", "do", "does",
    "did", "have", "has", "had", "can't", "won't", "don't", "doesn't", "didn't",
];

/// Auxiliaries that open a statement only when its subject is missing
/// ("Was hugely successful"); a question may start with them.
#[rustfmt::skip]
const AUX_STARTS: &[&str] = &[
    "is", "are", "was", "were", "am", "has", "had", "will", "would", "can", "could", "should",
    "shall", "must", "might", "may", "isn't", "aren't", "wasn't", "weren't", "hasn't", "hadn't",
    "won't", "wouldn't", "can't", "couldn't", "shouldn't",
];

/// English words that open a new (subordinate) clause mid-sentence.
#[rustfmt::skip]
const CLAUSE_OPENERS: &[&str] = &[
    "because", "cause", "although", "though", "unless", "whereas", "while", "but", "which",
    "since", "whether", "until", "where", "when", "if", "who",
];

/// English words after which the rest of the clause needs its own verb.
#[rustfmt::skip]
const SUBORDINATORS: &[&str] = &[
    "because", "cause", "although", "though", "unless", "whereas", "while", "which",
    "whether", "where", "when", "if", "who",
];

/// Subordinators that make a one-clause title a fragment when they open it
/// ("If you want to grow" says nothing on its own; "When did it start?" does).
#[rustfmt::skip]
const FRAGMENT_OPENERS: &[&str] = &[
    "because", "cause", "although", "though", "unless", "whereas", "while", "since",
    "whether", "until", "if", "once", "when", "where", "which",
];

/// Verbs after which "that" opens a clause ("I hope that …").
#[rustfmt::skip]
const THAT_VERBS: &[&str] = &[
    "hope", "hoped", "think", "thought", "know", "knew", "say", "said", "says", "believe",
    "mean", "meant", "guess", "realize", "realized", "realise", "feel", "felt", "sure", "is",
    "was", "show", "shows", "showed", "told", "tell", "found", "find", "learned", "learnt",
    "understand", "suggest", "agree", "admit", "expect", "wish", "fact", "idea", "so", "seems",
    "hear", "heard", "remember", "forget", "see", "saw", "notice", "noticed", "means", "thinks",
    "knows", "argue", "argued", "claim", "claimed", "promise", "promised", "decided", "assume",
];

/// Auxiliaries, modals and common verbs of speech, in the forms they take.
#[rustfmt::skip]
const VERBS: &[&str] = &[
    "am", "is", "are", "was", "were", "be", "been", "being", "have", "has", "had", "do", "does",
    "did", "will", "would", "shall", "should", "can", "could", "may", "might", "must", "ought",
    "gonna", "wanna", "gotta", "cannot", "let's",
    "go", "went", "gone", "get", "got", "gotten", "make", "made", "know", "knew", "known",
    "think", "thought", "take", "took", "taken", "see", "saw", "seen", "come", "came", "want",
    "look", "use", "find", "found", "give", "gave", "given", "tell", "told", "work", "call",
    "try", "tries", "tried", "ask", "need", "feel", "felt", "become", "became", "leave", "left",
    "put", "mean", "meant", "keep", "kept", "let", "begin", "began", "begun", "seem", "help",
    "talk", "turn", "start", "show", "shown", "hear", "heard", "play", "run", "ran", "move",
    "like", "live", "believe", "hold", "held", "bring", "brought", "happen", "write", "wrote",
    "written", "sit", "sat", "stand", "stood", "lose", "lost", "pay", "paid", "meet", "met",
    "include", "continue", "learn", "change", "lead", "led", "understand", "understood",
    "watch", "follow", "stop", "create", "speak", "spoke", "spoken", "read", "spend", "spent",
    "grow", "grew", "grown", "open", "walk", "win", "won", "teach", "taught", "offer",
    "remember", "love", "consider", "appear", "buy", "bought", "wait", "serve", "die", "send",
    "sent", "expect", "build", "built", "stay", "fall", "fell", "fallen", "cut", "reach",
    "kill", "remain", "suggest", "raise", "pass", "sell", "sold", "require", "decide", "pull",
    "hope", "say", "said", "says", "vote", "support", "agree", "fail", "post", "answer",
    "matter", "care", "hate", "wish", "guess", "bet", "add", "set", "explain", "miss", "thank",
    "check", "fix", "save", "share", "eat", "ate", "eaten", "sleep", "slept", "drink", "drank",
    "cook", "beat", "beats", "sound", "sounds", "goes", "does", "knows", "means", "happens",
    "works", "feels", "looks", "makes", "takes", "gets", "gives", "comes", "seems", "wants",
    "needs", "thinks", "break", "broke", "broken", "choose", "chose", "drive", "drove", "fly",
    "flew", "forget", "forgot", "hit", "hurt", "lie", "lay", "pick", "push", "catch", "caught",
    "fight", "fought", "feed", "sing", "sang", "sung", "swim", "wear", "wore", "throw", "threw",
    "wake", "woke", "deal", "dealt", "edit", "record", "measure", "trim", "plan", "prove",
    "exist", "exists", "belong", "belongs", "depend", "depends", "imagine", "listen", "trust",
    "accept", "achieve", "act", "allow", "apply", "argue", "arrive", "avoid", "become", "blame",
    "borrow", "burn", "carry", "cause", "celebrate", "claim", "climb", "close", "collect",
    "compare", "complain", "contain", "control", "cost", "count", "cover", "cry", "dance",
    "design", "destroy", "develop", "disagree", "discover", "discuss", "draw", "drew", "drop",
    "earn", "encourage", "end", "enjoy", "enter", "escape", "feel", "fill", "finish", "fit",
    "focus", "force", "gain", "grab", "hang", "hide", "hid", "hire", "hurry", "improve",
    "increase", "invest", "invite", "join", "jump", "kick", "kiss", "knock", "land", "laugh",
    "launch", "lend", "lent", "lift", "manage", "marry", "mention", "mind", "mix", "notice",
    "obey", "own", "paint", "perform", "pray", "prefer", "prepare", "pretend", "prevent",
    "produce", "promise", "protect", "provide", "publish", "punish", "reduce", "refuse",
    "relax", "release", "rely", "repeat", "replace", "reply", "rest", "return", "ride", "rode",
    "ring", "rise", "rose", "risk", "rush", "scream", "search", "seek", "sought", "shake",
    "shoot", "shot", "shout", "shut", "sign", "sink", "smell", "smile", "solve", "sort",
    "spread", "steal", "stole", "stick", "stuck", "study", "succeed", "suffer", "survive",
    "switch", "teach", "tend", "test", "touch", "train", "travel", "treat", "trust", "type",
    "visit", "warn", "wash", "waste", "welcome", "wonder", "worry", "yell", "feels", "became",
    "says", "goes", "helps", "lets", "keeps", "tells", "calls", "asks", "tries", "leads",
];

/// Subject pronouns: the next word (after adverbs) is taken as a verb.
const SUBJECTS: &[&str] = &["i", "you", "we", "they", "he", "she", "it", "who"];

/// Adverbs between a subject and its verb ("I really think").
#[rustfmt::skip]
const ADVERBS: &[&str] = &[
    "just", "really", "also", "always", "never", "actually", "still", "even", "only", "all",
    "both", "probably", "definitely", "literally", "usually", "often", "sometimes", "already",
    "currently", "basically", "honestly", "simply", "totally", "certainly", "clearly", "ever",
];

/// Prepositions: a verbless phrase they open does not stand alone ("On the court").
#[rustfmt::skip]
const PREPOSITIONS: &[&str] = &[
    "of", "in", "on", "at", "for", "with", "from", "by", "as", "about", "into", "onto", "than",
    "through", "without", "after", "before", "over", "under", "between", "to", "during",
    "around", "against", "across", "toward", "towards", "upon", "within", "behind",
];

/// Determiners that need a noun after an adjective ("a perfect", not "Is
/// this real?").
#[rustfmt::skip]
const NOUN_DETERMINERS: &[&str] = &[
    "a", "an", "the", "my", "your", "our", "their", "his", "its", "every", "each", "another",
    "such", "whose",
];

/// Determiners: never a verb after a subject.
#[rustfmt::skip]
const DETERMINERS: &[&str] = &[
    "a", "an", "the", "this", "that", "these", "those", "my", "your", "our", "their", "his",
    "her", "its", "every", "each", "another", "no", "some", "any", "such", "whose", "one",
];

/// Words between a determiner and its adjective ("a really perfect").
#[rustfmt::skip]
const INTENSIFIERS: &[&str] = &[
    "very", "really", "so", "too", "quite", "pretty", "most", "more", "super", "truly",
    "extremely", "incredibly", "absolutely", "totally", "completely", "much", "less",
];

/// Common adjectives: after a determiner at the end of a title they miss
/// their noun ("There wasn't a perfect").
#[rustfmt::skip]
const ADJECTIVES: &[&str] = &[
    "perfect", "good", "great", "big", "small", "little", "new", "old", "real", "whole", "true",
    "right", "wrong", "bad", "long", "short", "high", "low", "huge", "nice", "important",
    "different", "same", "simple", "full", "hard", "easy", "strong", "free", "special", "clear",
    "major", "main", "certain", "entire", "particular", "general", "public", "political",
    "economic", "social", "national", "local", "private", "common", "serious", "final", "key",
    "best", "worst", "better", "worse", "biggest", "first", "last", "next", "only", "other",
    "single", "young", "late", "early", "large", "deep", "open", "huge", "massive", "amazing",
    "incredible", "crazy", "total", "complete", "basic", "actual", "recent", "current", "whole",
    "huge", "tiny", "great", "fine", "hot", "cold", "dark", "bright", "quick", "slow", "fast",
    "cheap", "expensive", "rich", "poor", "happy", "sad", "good", "proper", "normal", "typical",
    "average", "fair", "honest", "smart", "stupid", "weird", "strange", "interesting", "funny",
    "beautiful", "ugly", "safe", "dangerous", "healthy", "natural", "personal", "human",
    "digital", "financial", "global", "international", "modern", "traditional", "similar",
    "specific", "possible", "impossible", "necessary", "available", "likely", "unlikely",
    "successful", "powerful", "useful", "wonderful", "awesome", "terrible", "horrible",
];

/// Chinese and Japanese words that start a new clause.
#[rustfmt::skip]
const CJK_OPENERS: &[&str] = &[
    "所以", "但是", "可是", "因为", "因為", "然后", "然後", "而且", "如果", "那么", "那麼", "接下来",
    "接下來", "比如说", "比如說", "或者", "不过", "不過", "另外", "这个", "這個",
    "这件", "這件", "那", "でも", "だから", "それで", "しかし",
];

/// Chinese and Japanese words a title drops at its start (connectives, fillers).
#[rustfmt::skip]
const CJK_LEADS: &[&str] = &[
    "所以", "但是", "可是", "然后", "然後", "而且", "那么", "那麼", "接下来", "接下來", "其实", "其實",
    "另外", "嗯", "呃", "啊", "对", "對", "那", "でも", "だから", "それで", "しかし", "えっと",
    "あの", "まあ",
];

/// Chinese subordinators: a one-clause title they open is a fragment.
const CJK_FRAGMENT_OPENERS: &[&str] = &["因为", "因為", "如果", "虽然", "雖然", "要是"];

/// "那" is "then" unless it is "that" (那个, 那些, …).
const NA_NOUN_NEXT: &[char] = &[
    '个', '個', '些', '裡', '里', '边', '邊', '樣', '样', '种', '種', '时', '時', '天', '位', '件',
    '次',
];

/// Characters a Chinese or Japanese title never ends on: particles,
/// prepositions, conjunctions, classifiers, copulas.
#[rustfmt::skip]
const CJK_DANGLING: &[char] = &[
    '的', '和', '与', '與', '或', '在', '把', '被', '对', '對', '从', '從', '向', '跟', '给', '給',
    '而', '但', '是', '就', '很', '都', '也', '还', '還', '让', '讓', '用', '个', '個', '这', '這',
    '那', '一', '每', '些', '于', '於', 'は', 'が', 'を', 'に', 'で', 'と', 'の', 'も', 'へ',
];

/// Korean leading words a title drops (connectives, fillers).
#[rustfmt::skip]
const KO_LEADS: &[&str] = &[
    "그래서", "그리고", "그런데", "근데", "그러니까", "그러면", "그럼", "하지만", "그래도", "또",
    "아", "어", "음", "네", "예", "자", "일단", "이제", "뭐",
];

/// Korean connective endings: the clause ends after a word ending so.
#[rustfmt::skip]
const KO_CONNECTIVE_ENDINGS: &[&str] = &[
    "고", "서", "는데", "은데", "지만", "면서", "니까", "으니", "므로", "며", "면", "도록", "거나",
    "든지",
];

/// Korean auxiliaries that continue a verb in -고 ("보내고 싶습니다").
const KO_AUX_STARTS: &[&str] = &["싶", "있", "계", "말", "나서", "나니", "보", "주"];

/// Korean predicate endings that close a sentence.
#[rustfmt::skip]
const KO_FINAL_ENDINGS: &[&str] = &[
    "다", "요", "까", "죠", "네", "군",
];

/// A word without its surrounding punctuation (CJK punctuation included).
fn bare(word: &str) -> &str {
    word.trim_matches(|c: char| !c.is_alphanumeric())
}

/// Does `word` end a clause with punctuation (`,` `;` `:` `—` `、` `，` …)?
pub fn ends_with_clause_mark(word: &str) -> bool {
    word.trim_end_matches(['"', '\'', ')', '”', '’', '」', '』', '）'])
        .ends_with([
            ',', ';', ':', '—', '–', '.', '?', '!', '…', '、', '，', '：', '；', '。', '？', '！',
        ])
}

/// Does the text of `words[i..]` start with one of `list` (for "那": not
/// "那个", "那些", …)? Returns how many words the match covers when it ends
/// at a word boundary.
fn cjk_match(words: &[&str], i: usize, list: &[&str]) -> Option<usize> {
    let rest: String = words[i..].iter().take(6).copied().collect();
    let found = list.iter().find(|w| {
        rest.starts_with(*w)
            && !(**w == "那"
                && rest[w.len()..]
                    .chars()
                    .next()
                    .is_some_and(|c| NA_NOUN_NEXT.contains(&c)))
    })?;
    let mut len = 0;
    for (n, w) in words[i..].iter().enumerate() {
        len += w.len();
        if len == found.len() {
            return Some(n + 1);
        }
        if len > found.len() {
            return None;
        }
    }
    None
}

/// Indexes `1..words.len()` where a new clause starts.
pub fn clause_starts(words: &[&str], lang: Lang) -> Vec<usize> {
    (1..words.len())
        .filter(|&i| {
            ends_with_clause_mark(words[i - 1])
                || match lang {
                    Lang::En | Lang::Other => {
                        CLAUSE_OPENERS.contains(&normalize(words[i]).as_str()) && !a_while(words, i)
                    }
                    Lang::Zh | Lang::Ja => cjk_match(words, i, CJK_OPENERS).is_some(),
                    Lang::Ko => {
                        let prev = bare(words[i - 1]);
                        KO_CONNECTIVE_ENDINGS.iter().any(|e| prev.ends_with(e))
                            && !(prev.ends_with('고')
                                && KO_AUX_STARTS.iter().any(|a| bare(words[i]).starts_with(a)))
                    }
                }
        })
        .collect()
}

/// How many leading words a title drops: fillers and connectives ("So,
/// and here's why…" → "here's why…", "所以…", "그래서…"), never all of them.
pub fn lead_skip(words: &[&str], lang: Lang) -> usize {
    let mut skip = 0;
    while skip < words.len() {
        let step = match lang {
            Lang::Zh | Lang::Ja => cjk_match(words, skip, CJK_LEADS),
            Lang::Ko => KO_LEADS.contains(&bare(words[skip])).then_some(1),
            Lang::En | Lang::Other => {
                let n = normalize(words[skip]);
                (FILLERS.contains(&n.as_str()) || CONNECTIVES.contains(&n.as_str())).then_some(1)
            }
        };
        match step {
            Some(n) if skip + n < words.len() => skip += n,
            _ => break,
        }
    }
    skip
}

/// Does a title of `words` end badly: on a dangling word ("of", "the",
/// "的"), on a determiner and adjective without their noun ("a perfect"),
/// on a bare auxiliary (unless `whole`: the speaker ended the sentence
/// there), or, in Korean, on a connective ending? With `strict`, a Korean or
/// Japanese title must also end where a predicate ends (`whole` or a final
/// ending / 。).
pub fn bad_end(words: &[&str], lang: Lang, whole: bool, strict: bool) -> bool {
    let Some(last_word) = words.last() else {
        return true;
    };
    let last = normalize(last_word);
    // A sentence the speaker ended may end on a particle ("…goes in.",
    // "What are you waiting for?") or an auxiliary ("Yes we can.").
    let particle = whole && PREPOSITIONS.contains(&last.as_str());
    if (DANGLING.contains(&last.as_str()) && !particle && !a_while(words, words.len() - 1))
        || (!whole && AUX_END.contains(&last.as_str()))
    {
        return true;
    }
    match lang {
        Lang::En => adjective_without_noun(words),
        Lang::Zh | Lang::Ja => {
            let text = bare(last_word);
            let Some(c) = text.chars().last() else {
                return false;
            };
            let copula_de = c == '的' && words.iter().any(|w| w.contains('是'));
            (CJK_DANGLING.contains(&c) && !copula_de)
                || (strict
                    && lang == Lang::Ja
                    && !whole
                    && !last_word.ends_with(['。', '！', '？']))
        }
        Lang::Ko => {
            let w = bare(last_word);
            KO_CONNECTIVE_ENDINGS.iter().any(|e| w.ends_with(e))
                || w.ends_with('의')
                || (strict && !whole && !KO_FINAL_ENDINGS.iter().any(|e| w.ends_with(e)))
        }
        Lang::Other => false,
    }
}

/// Is `words[i]` the noun of "a while" ("It takes a while")?
fn a_while(words: &[&str], i: usize) -> bool {
    i > 0 && normalize(words[i]) == "while" && normalize(words[i - 1]) == "a"
}

/// "There wasn't a perfect": the last word is an adjective and only
/// intensifiers stand between it and a determiner ("the best" is whole).
fn adjective_without_noun(words: &[&str]) -> bool {
    let toks: Vec<String> = words.iter().map(|w| normalize(w)).collect();
    let Some(last) = toks.last() else {
        return false;
    };
    let adjective = |w: &str| {
        ADJECTIVES.contains(&w)
            || (w.len() > 5 && (w.ends_with("ful") || w.ends_with("ous") || w.ends_with("less")))
    };
    if !adjective(last) {
        return false;
    }
    let before = toks[..toks.len() - 1]
        .iter()
        .rev()
        .find(|w| !INTENSIFIERS.contains(&w.as_str()) && !adjective(w));
    let superlative =
        last.ends_with("est") || ["best", "worst", "last", "first"].contains(&last.as_str());
    match before.map(String::as_str) {
        Some("the") => !superlative,
        Some(d) => NOUN_DETERMINERS.contains(&d),
        None => false,
    }
}

/// Does the English run of words contain a verb: an auxiliary or common
/// verb (not an infinitive after "to"), a contraction ("it's", "don't"), a
/// past form in "-ed", or the word after a subject pronoun?
pub fn has_verb(toks: &[String]) -> bool {
    toks.iter().enumerate().any(|(i, t)| {
        let after_to = i > 0 && toks[i - 1] == "to";
        let known = || {
            VERBS.contains(&t.as_str())
                || t.strip_suffix('s').is_some_and(|b| VERBS.contains(&b))
                || t.strip_suffix("ed").is_some_and(|b| VERBS.contains(&b))
        };
        let contraction = ["n't", "'s", "'re", "'ve", "'ll", "'d", "'m"]
            .iter()
            .any(|s| t.ends_with(s) && t.len() > s.len());
        let past = t.len() >= 5
            && t.ends_with("ed")
            && !["hundred", "indeed", "speed"].contains(&t.as_str());
        // "I hope", "we really think", "voters still trust".
        let after_subject = {
            let mut j = i;
            while j > 0 && ADVERBS.contains(&toks[j - 1].as_str()) {
                j -= 1;
            }
            let before = j.checked_sub(1).map(|k| toks[k].as_str());
            before.is_some_and(|b| {
                SUBJECTS.contains(&b)
                    || (j < i
                        && b.chars().all(char::is_alphabetic)
                        && !DETERMINERS.contains(&b)
                        && !PREPOSITIONS.contains(&b)
                        && !CONNECTIVES.contains(&b))
            }) && !ADVERBS.contains(&t.as_str())
                && !PREPOSITIONS.contains(&t.as_str())
                && !DETERMINERS.contains(&t.as_str())
                && !CONNECTIVES.contains(&t.as_str())
        };
        contraction || after_subject || (!after_to && (known() || past))
    })
}

/// Is an English title of `words` a complete phrase? It needs a verb
/// unless it is a whole sentence the speaker ended (`terminal_whole`: a
/// noun phrase such as "The biggest mistake of my career." stands alone);
/// a verbless one never opens with a preposition; every clause a
/// subordinating word opens ("that" after "hope", "think", …) has its own
/// verb ("I hope that six years as Prime Minister" has none); and a single
/// clause opened by one ("If you want to grow") is a fragment unless it
/// asks a question.
pub fn complete_en(words: &[&str], terminal_whole: bool) -> bool {
    let toks: Vec<String> = words.iter().map(|w| normalize(w)).collect();
    if toks.is_empty() {
        return false;
    }
    let verb = has_verb(&toks);
    if !verb && (!terminal_whole || PREPOSITIONS.contains(&toks[0].as_str())) {
        return false;
    }
    if open_subordinate(words) {
        return false;
    }
    let question = words.last().is_some_and(|w| w.contains('?'));
    // "Have given me the experience": a verb without its subject.
    let participle = |t: &String| {
        t.ends_with("ed")
            || t.ends_with("en")
            || ["been", "got", "made", "had"].contains(&t.as_str())
    };
    if !question
        && (AUX_STARTS.contains(&toks[0].as_str())
            || (["have", "haven't"].contains(&toks[0].as_str())
                && toks.get(1).is_some_and(participle)))
    {
        return false;
    }
    let one_clause = words[..words.len() - 1]
        .iter()
        .all(|w| !ends_with_clause_mark(w));
    !(FRAGMENT_OPENERS.contains(&toks[0].as_str()) && one_clause && !question)
}

/// Does a clause opened by a subordinating word (or by "but" or "so" after
/// a comma: "…, but the ones") lack its verb (up to the next clause mark or
/// the end)?
pub fn open_subordinate(words: &[&str]) -> bool {
    let toks: Vec<String> = words.iter().map(|w| normalize(w)).collect();
    let question = words.last().is_some_and(|w| w.contains(['?', '？']));
    (0..toks.len()).any(|k| {
        // Not "a while", nor "that" as a pronoun or determiner ("What is
        // that?", "Is that new?").
        let opens = (SUBORDINATORS.contains(&toks[k].as_str()) && !a_while(words, k))
            || (toks[k] == "that"
                && !question
                && k > 0
                && k + 1 < toks.len()
                && THAT_VERBS.contains(&toks[k - 1].as_str()))
            || (["but", "so"].contains(&toks[k].as_str())
                && k > 0
                && ends_with_clause_mark(words[k - 1]));
        if !opens || (k + 1 < words.len() && ends_with_clause_mark(words[k])) {
            return false;
        }
        let end = (k + 1..words.len())
            .find(|&j| ends_with_clause_mark(words[j]))
            .map_or(words.len(), |j| j + 1);
        !has_verb(&toks[k + 1..end])
    })
}

/// Does the Chinese or Japanese title open with a subordinator ("如果…")?
pub fn cjk_fragment_opener(words: &[&str]) -> bool {
    cjk_match(words, 0, CJK_FRAGMENT_OPENERS).is_some()
}
