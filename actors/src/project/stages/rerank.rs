//! Optional re-ranking of clip candidates by a language model behind an
//! OpenAI-compatible chat endpoint. Used only when configured; any failure
//! is an `Err` and the caller keeps the local order.

use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use serde::Deserialize;
use serde_json::{json, Value};

use super::score::Candidate;

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
to 100 (very likely watched to the end and shared). Reply with JSON only.";

/// Sends the candidates' texts (numbered) to POST {base_url}/chat/completions (JSON body {model, messages:[system,user], temperature:0}) asking for a JSON answer {"scores":[{"index":n,"score":0-100}]}; blends the model score with the local score (e.g. 50/50), re-sorts best first. Any error (HTTP, timeout, unparsable answer, missing indexes) returns Err and the caller keeps the local order.
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
    let model_scores = parse_scores(&content, candidates.len())?;
    Ok(blend(candidates, &model_scores))
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
         {{\"scores\":[{{\"index\":1,\"score\":73}},{{\"index\":2,\"score\":41}}]}} \
         with one entry for every index from 1 to {}, each score an integer from 0 to 100.",
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
}

/// Parses the model's answer into one score (0..=100) per candidate, in order.
fn parse_scores(content: &str, count: usize) -> Result<Vec<f64>> {
    let json = extract_json(content);
    let answer: ScoresAnswer = serde_json::from_str(json)
        .with_context(|| format!("unparsable re-rank answer: {}", excerpt(content)))?;

    let mut scores: Vec<Option<f64>> = vec![None; count];
    for entry in answer.scores {
        let index = as_number(&entry.index)
            .filter(|i| i.fract() == 0.0 && *i >= 1.0 && *i <= count as f64)
            .ok_or_else(|| anyhow!("re-rank answer has a bad index {}", entry.index))?;
        let score = as_number(&entry.score)
            .ok_or_else(|| anyhow!("re-rank answer has a bad score {}", entry.score))?;
        let slot = &mut scores[index as usize - 1];
        if slot.replace(score.clamp(0.0, 100.0)).is_some() {
            bail!("re-rank answer scores index {index} twice");
        }
    }
    scores
        .into_iter()
        .enumerate()
        .map(|(i, s)| s.ok_or_else(|| anyhow!("re-rank answer misses index {}", i + 1)))
        .collect()
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

/// Blends the model's scores into the candidates and sorts them best first.
fn blend(candidates: Vec<Candidate>, model_scores: &[f64]) -> Vec<Candidate> {
    let mut blended: Vec<Candidate> = candidates
        .into_iter()
        .zip(model_scores)
        .map(|(mut c, &model)| {
            let score = (1.0 - MODEL_WEIGHT) * f64::from(c.score) + MODEL_WEIGHT * model;
            c.score = score.clamp(0.0, 100.0).round() as u8;
            c
        })
        .collect();
    blended.sort_by(|a, b| b.score.cmp(&a.score).then(a.start.total_cmp(&b.start)));
    blended
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::project::stages::score::ScoreBreakdown;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    fn candidate(start: f64, score: u8) -> Candidate {
        Candidate {
            start,
            end: start + 30.0,
            first_word: 0,
            end_word: 1,
            score,
            title: format!("Clip at {start}"),
            breakdown: ScoreBreakdown {
                hook: 0.5,
                questions: 0.5,
                emphasis: 0.5,
                speech_rate: 0.5,
                loudness: 0.5,
                scenes: 0.5,
                completeness: 0.5,
                prompt: None,
            },
            scores: Default::default(),
            reason: String::new(),
        }
    }

    fn config(base_url: String, timeout: Duration) -> RerankConfig {
        RerankConfig {
            base_url,
            api_key: Some("secret-key".into()),
            model: "test-model".into(),
            timeout,
        }
    }

    fn chat_body(content: &str) -> String {
        json!({
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "choices": [{ "index": 0, "message": { "role": "assistant", "content": content }, "finish_reason": "stop" }],
        })
        .to_string()
    }

    /// Reads one HTTP request (head and Content-Length body) and returns it as text.
    async fn read_request(sock: &mut TcpStream) -> String {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            let n = sock.read(&mut chunk).await.unwrap();
            if n == 0 {
                break;
            }
            buf.extend_from_slice(&chunk[..n]);
            let text = String::from_utf8_lossy(&buf);
            if let Some(head_end) = text.find("\r\n\r\n") {
                let length = text[..head_end]
                    .lines()
                    .find_map(|l| {
                        let (name, value) = l.split_once(':')?;
                        name.eq_ignore_ascii_case("content-length")
                            .then(|| value.trim().parse::<usize>().ok())?
                    })
                    .unwrap_or(0);
                if buf.len() >= head_end + 4 + length {
                    break;
                }
            }
        }
        String::from_utf8(buf).unwrap()
    }

    /// Serves one canned response on 127.0.0.1 and hands back the request it got.
    async fn serve_once(
        status: &'static str,
        body: String,
    ) -> (String, tokio::task::JoinHandle<String>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let handle = tokio::spawn(async move {
            let (mut sock, _) = listener.accept().await.unwrap();
            let request = read_request(&mut sock).await;
            let response = format!(
                "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            sock.write_all(response.as_bytes()).await.unwrap();
            sock.shutdown().await.ok();
            request
        });
        (format!("http://{addr}/v1/"), handle)
    }

    #[tokio::test]
    async fn blend_reorders_candidates() {
        let answer = "```json\n{\"scores\": [{\"index\": 1, \"score\": 10}, {\"index\": 2, \"score\": 100}, {\"index\": 3, \"score\": 50}]}\n```";
        let (url, server) = serve_once("200 OK", chat_body(answer)).await;
        let candidates = vec![
            candidate(0.0, 80),
            candidate(100.0, 60),
            candidate(200.0, 50),
        ];
        let texts: Vec<String> = ["first clip text", "second clip text", "third clip text"]
            .map(String::from)
            .to_vec();

        let ranked = rerank(
            candidates,
            &texts,
            Some("the part about \"second\" things"),
            &config(url, Duration::from_secs(10)),
        )
        .await
        .unwrap();
        let order: Vec<(f64, u8)> = ranked.iter().map(|c| (c.start, c.score)).collect();
        assert_eq!(order, [(100.0, 80), (200.0, 50), (0.0, 45)]);

        let request = server.await.unwrap();
        assert!(
            request.starts_with("POST /v1/chat/completions HTTP/1.1\r\n"),
            "{request}"
        );
        assert!(request
            .to_ascii_lowercase()
            .contains("authorization: bearer secret-key"));
        let body: Value =
            serde_json::from_str(&request[request.find("\r\n\r\n").unwrap() + 4..]).unwrap();
        assert_eq!(body["model"], "test-model");
        assert_eq!(body["temperature"], 0);
        assert_eq!(body["messages"][0]["role"], "system");
        let user = body["messages"][1]["content"].as_str().unwrap();
        assert!(user.contains("Candidate 2:\nsecond clip text"));
        // The project's prompt is passed on.
        assert!(
            user.contains("asked for clips about: the part about \"second\" things"),
            "{user}"
        );
    }

    #[tokio::test]
    async fn garbage_answer_is_an_error() {
        let (url, server) = serve_once("200 OK", chat_body("They all look great to me!")).await;
        let texts = vec!["a".to_string(), "b".to_string()];
        let result = rerank(
            vec![candidate(0.0, 70), candidate(50.0, 60)],
            &texts,
            None,
            &config(url, Duration::from_secs(10)),
        )
        .await;
        assert!(result.is_err());
        server.await.unwrap();
    }

    #[tokio::test]
    async fn http_error_is_an_error() {
        let (url, server) =
            serve_once("500 Internal Server Error", "{\"error\":\"boom\"}".into()).await;
        let texts = vec!["a".to_string()];
        let err = rerank(
            vec![candidate(0.0, 70)],
            &texts,
            None,
            &config(url, Duration::from_secs(10)),
        )
        .await
        .unwrap_err();
        assert!(format!("{err:#}").contains("500"), "{err:#}");
        server.await.unwrap();
    }

    #[tokio::test]
    async fn silent_server_times_out() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let server = tokio::spawn(async move {
            let (mut sock, _) = listener.accept().await.unwrap();
            read_request(&mut sock).await;
            tokio::time::sleep(Duration::from_secs(3)).await;
        });
        let texts = vec!["a".to_string()];
        let result = rerank(
            vec![candidate(0.0, 70)],
            &texts,
            None,
            &config(url, Duration::from_millis(300)),
        )
        .await;
        assert!(result.is_err());
        server.abort();
    }

    #[tokio::test]
    async fn nothing_to_rank_makes_no_request() {
        // Port 9 (discard) on loopback: would fail if contacted.
        let cfg = config("http://127.0.0.1:9/v1".into(), Duration::from_millis(300));
        assert!(rerank(Vec::new(), &[], None, &cfg)
            .await
            .unwrap()
            .is_empty());
        assert!(rerank(vec![candidate(0.0, 1)], &[], None, &cfg)
            .await
            .is_err());
    }

    #[test]
    fn parses_answers_strictly() {
        assert_eq!(
            parse_scores(
                r#"{"scores":[{"index":2,"score":40},{"index":1,"score":90}]}"#,
                2
            )
            .unwrap(),
            [90.0, 40.0]
        );
        assert_eq!(
            parse_scores("<think>{maybe}</think>\nSure:\n```JSON\n{\"scores\":[{\"index\":\"1\",\"score\":120.0}]}\n```", 1).unwrap(),
            [100.0]
        );
        assert_eq!(
            parse_scores("```{\"scores\":[{\"index\":1.0,\"score\":\"7\"}]}```", 1).unwrap(),
            [7.0]
        );
        assert!(
            parse_scores(r#"{"scores":[{"index":1,"score":90}]}"#, 2).is_err(),
            "missing index"
        );
        assert!(
            parse_scores(r#"{"scores":[{"index":0,"score":90}]}"#, 1).is_err(),
            "index out of range"
        );
        assert!(
            parse_scores(
                r#"{"scores":[{"index":1,"score":9},{"index":1,"score":8}]}"#,
                1
            )
            .is_err(),
            "duplicate"
        );
        assert!(
            parse_scores(r#"{"scores":[{"index":1.5,"score":9}]}"#, 1).is_err(),
            "fractional index"
        );
        assert!(
            parse_scores(r#"{"scores":[{"index":1,"score":null}]}"#, 1).is_err(),
            "null score"
        );
        assert!(parse_scores("{\"ranking\": [1]}", 1).is_err());
        assert!(parse_scores("", 1).is_err());
    }

    #[test]
    fn blend_breaks_ties_by_start() {
        let ranked = blend(
            vec![candidate(50.0, 60), candidate(10.0, 40)],
            &[40.0, 60.0],
        );
        assert_eq!(
            ranked.iter().map(|c| c.start).collect::<Vec<_>>(),
            [10.0, 50.0]
        );
        assert!(ranked.iter().all(|c| c.score == 50));
    }
}
