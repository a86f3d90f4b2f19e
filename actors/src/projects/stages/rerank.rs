//! Optional re-ranking of clip candidates by a language model behind an
//! OpenAI-compatible chat endpoint, which also writes each clip's title.
//! Used only when configured; any failure is an `Err` and the caller keeps
//! the local order and titles.

use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use serde::Deserialize;
use serde_json::{json, Value};

use super::score::Candidate;
use super::titles::{title_width, MAX_TITLE_CHARS};

/// Where and how to reach the chat endpoint.
#[derive(Clone, Debug)]
pub struct RerankConfig {
    /// Base URL of the API, e.g. `http://127.0.0.1:8000/v1`.
    pub base_url: String,
    /// Sent as a bearer token when present and non-empty.
    pub api_key: Option<String>,
    pub model: String,
    /// Limit for the whole request, connection to last byte.
    pub timeout: Duration,
}

/// Share of the model's score in the blended score (the rest is the local score).
pub const MODEL_WEIGHT: f64 = 0.5;

/// Each candidate's text is cut to this many characters in the prompt.
const MAX_TEXT_CHARS: usize = 2_000;
/// How much of an error body is quoted in an error message.
const MAX_ERROR_BODY_CHARS: usize = 300;

const SYSTEM_PROMPT: &str = "You are an editor of short vertical videos (TikTok, Reels, Shorts). \
You judge transcript excerpts of candidate clips cut from a long talk: how strongly the opening \
hooks a scrolling viewer, whether the excerpt makes sense on its own without missing context, \
and how engaging, surprising or useful it is. Score every candidate from 0 (would be skipped) \
to 100 (very likely watched to the end and shared), and write its title: a headline in the \
language of the excerpt, a complete phrase built from its strongest sentence. Reply with JSON only.";

/// Sends the candidates' texts (numbered) to POST {base_url}/chat/completions (JSON body {model, messages:[system,user], temperature:0}) asking for a JSON answer {"scores":[{"index":n,"score":0-100,"title":"…"}]}; blends the model score with the local score (e.g. 50/50), re-sorts best first. Any error (HTTP, timeout, unparsable answer, missing indexes) returns Err and the caller keeps the local order.
///
/// A title the model writes replaces the local one when it is one line at
/// most [`MAX_TITLE_CHARS`] wide (a CJK character counts two); a missing or
/// unusable title keeps the local one and is no error.
///
/// `texts[i]` is the text of `candidates[i]`; candidates are numbered from 1
/// in the prompt. The blended score replaces `Candidate::score`, and the
/// result is sorted by score descending, earlier start first on ties.
///
/// With a `prompt` (what the user wants clips about), the model is told to
/// favour candidates that match it.
pub async fn rerank(
    candidates: Vec<Candidate>,
    texts: &[String],
    prompt: Option<&str>,
    cfg: &RerankConfig,
) -> Result<Vec<Candidate>> {
    if candidates.len() != texts.len() {
        bail!(
            "{} candidates but {} texts to re-rank",
            candidates.len(),
            texts.len()
        );
    }
    if candidates.is_empty() {
        return Ok(candidates);
    }
    let content = ask_model(texts, prompt, cfg).await?;
    let rated = parse_scores(&content, candidates.len())?;
    Ok(blend(candidates, &rated))
}

#[derive(Deserialize)]
struct ChatResponse {
    choices: Vec<Choice>,
}

#[derive(Deserialize)]
struct Choice {
    message: Message,
}

#[derive(Deserialize)]
struct Message {
    content: Option<String>,
}

/// Posts the prompt and returns the assistant message's content.
async fn ask_model(texts: &[String], prompt: Option<&str>, cfg: &RerankConfig) -> Result<String> {
    let client = reqwest::Client::builder()
        .timeout(cfg.timeout)
        .build()
        .context("building the re-rank HTTP client")?;
    let url = format!("{}/chat/completions", cfg.base_url.trim_end_matches('/'));
    let body = json!({
        "model": cfg.model,
        "temperature": 0,
        "messages": [
            { "role": "system", "content": SYSTEM_PROMPT },
            { "role": "user", "content": user_prompt(texts, prompt) },
        ],
    });
    let mut request = client.post(&url).json(&body);
    if let Some(key) = cfg.api_key.as_deref().filter(|k| !k.is_empty()) {
        request = request.bearer_auth(key);
    }

    let response = request
        .send()
        .await
        .with_context(|| format!("POST {url}"))?;
    let status = response.status();
    let text = response
        .text()
        .await
        .with_context(|| format!("reading the answer of {url}"))?;
    if !status.is_success() {
        let excerpt: String = text.chars().take(MAX_ERROR_BODY_CHARS).collect();
        bail!("{url} answered {status}: {excerpt}");
    }
    let chat: ChatResponse = serde_json::from_str(&text)
        .with_context(|| format!("{url} did not answer a chat completion"))?;
    chat.choices
        .into_iter()
        .next()
        .and_then(|c| c.message.content)
        .filter(|c| !c.trim().is_empty())
        .ok_or_else(|| anyhow!("{url} answered no message content"))
}

fn user_prompt(texts: &[String], wanted: Option<&str>) -> String {
    let mut prompt = format!(
        "Here are {} candidate clips, numbered from 1 to {}.\n\n",
        texts.len(),
        texts.len()
    );
    if let Some(wanted) = wanted.map(str::trim).filter(|w| !w.is_empty()) {
        let wanted: String = wanted.chars().take(MAX_TEXT_CHARS).collect();
        prompt.push_str(&format!(
            "The viewer asked for clips about: {wanted}\nScore candidates that match this request higher.\n\n"
        ));
    }
    for (i, text) in texts.iter().enumerate() {
        let text: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let mut excerpt: String = text.chars().take(MAX_TEXT_CHARS).collect();
        if excerpt.len() < text.len() {
            excerpt.push('…');
        }
        prompt.push_str(&format!("Candidate {}:\n{excerpt}\n\n", i + 1));
    }
    prompt.push_str(&format!(
        "Answer with JSON only, exactly in this form: \
         {{\"scores\":[{{\"index\":1,\"score\":73,\"title\":\"Why most startups fail\"}},{{\"index\":2,\"score\":41,\"title\":\"…\"}}]}} \
         with one entry for every index from 1 to {}, each score an integer from 0 to 100, \
         each title one line of at most {MAX_TITLE_CHARS} characters (30 in Chinese, Japanese or Korean).",
        texts.len()
    ));
    prompt
}

#[derive(Deserialize)]
struct ScoresAnswer {
    scores: Vec<ScoreEntry>,
}

#[derive(Deserialize)]
struct ScoreEntry {
    index: Value,
    score: Value,
    #[serde(default)]
    title: Value,
}

/// The model's verdict on one candidate.
#[derive(Clone, Debug, PartialEq)]
struct Rated {
    /// 0..=100.
    score: f64,
    /// The model's title, when usable ([`usable_title`]).
    title: Option<String>,
}

/// Parses the model's answer into one score (0..=100) and title per
/// candidate, in order.
fn parse_scores(content: &str, count: usize) -> Result<Vec<Rated>> {
    let json = extract_json(content);
    let answer: ScoresAnswer = serde_json::from_str(json)
        .with_context(|| format!("unparsable re-rank answer: {}", excerpt(content)))?;

    let mut scores: Vec<Option<Rated>> = vec![None; count];
    for entry in answer.scores {
        let index = as_number(&entry.index)
            .filter(|i| i.fract() == 0.0 && *i >= 1.0 && *i <= count as f64)
            .ok_or_else(|| anyhow!("re-rank answer has a bad index {}", entry.index))?;
        let score = as_number(&entry.score)
            .ok_or_else(|| anyhow!("re-rank answer has a bad score {}", entry.score))?;
        let slot = &mut scores[index as usize - 1];
        let rated = Rated {
            score: score.clamp(0.0, 100.0),
            title: usable_title(&entry.title),
        };
        if slot.replace(rated).is_some() {
            bail!("re-rank answer scores index {index} twice");
        }
    }
    scores
        .into_iter()
        .enumerate()
        .map(|(i, s)| s.ok_or_else(|| anyhow!("re-rank answer misses index {}", i + 1)))
        .collect()
}

/// A title the model wrote, trimmed of spaces and enclosing quotes, if it
/// is one line of at most [`MAX_TITLE_CHARS`] wide without control or bidi
/// characters.
fn usable_title(value: &Value) -> Option<String> {
    let title = value.as_str()?.trim();
    let title = ['"', '“', '「', '\'']
        .iter()
        .zip(['"', '”', '」', '\''])
        .find_map(|(open, close)| {
            title
                .strip_prefix(*open)
                .and_then(|t| t.strip_suffix(close))
        })
        .unwrap_or(title)
        .trim();
    (!title.is_empty()
        && title_width(title) <= MAX_TITLE_CHARS
        && crate::accounts::text::line_ok(title))
    .then(|| title.to_string())
}

/// A finite number, given as a JSON number or a numeric string.
fn as_number(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
    .filter(|n: &f64| n.is_finite())
}

/// The JSON object inside an answer that may carry a reasoning block,
/// Markdown fences or prose around it.
fn extract_json(content: &str) -> &str {
    let body = match content.rfind("</think>") {
        Some(end) => &content[end + "</think>".len()..],
        None => content,
    };
    let body = strip_fences(body.trim());
    match (body.find('{'), body.rfind('}')) {
        (Some(open), Some(close)) if open < close => &body[open..=close],
        _ => body,
    }
}

/// The inside of the first ```-fenced block, if there is one.
fn strip_fences(text: &str) -> &str {
    let Some(open) = text.find("```") else {
        return text;
    };
    let inside = text[open + 3..].trim_start_matches(|c: char| c.is_ascii_alphanumeric());
    match inside.find("```") {
        Some(close) => &inside[..close],
        None => inside,
    }
}

fn excerpt(text: &str) -> String {
    text.chars().take(MAX_ERROR_BODY_CHARS).collect()
}

/// Blends the model's scores into the candidates, takes its usable
/// titles, and sorts them best first.
fn blend(candidates: Vec<Candidate>, rated: &[Rated]) -> Vec<Candidate> {
    let mut blended: Vec<Candidate> = candidates
        .into_iter()
        .zip(rated)
        .map(|(mut c, model)| {
            let score = (1.0 - MODEL_WEIGHT) * f64::from(c.score) + MODEL_WEIGHT * model.score;
            c.score = score.clamp(0.0, 100.0).round() as u8;
            if let Some(title) = &model.title {
                c.title = title.clone();
            }
            c
        })
        .collect();
    blended.sort_by(|a, b| b.score.cmp(&a.score).then(a.start.total_cmp(&b.start)));
    blended
}

#[cfg(test)]
#[path = "rerank_tests.rs"]
mod tests;
