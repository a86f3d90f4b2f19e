//! Tests of `rerank.rs` against a one-shot fake chat server.

use super::*;
use crate::projects::stages::score::ScoreBreakdown;
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

/// The scores of a parsed answer.
fn scores(content: &str, count: usize) -> Vec<f64> {
    let rated = parse_scores(content, count).unwrap();
    rated.iter().map(|r| r.score).collect()
}

fn rated(score: f64) -> Rated {
    Rated { score, title: None }
}

#[test]
fn parses_answers_strictly() {
    assert_eq!(
        scores(
            r#"{"scores":[{"index":2,"score":40},{"index":1,"score":90}]}"#,
            2
        ),
        [90.0, 40.0]
    );
    assert_eq!(
        scores("<think>{maybe}</think>\nSure:\n```JSON\n{\"scores\":[{\"index\":\"1\",\"score\":120.0}]}\n```", 1),
        [100.0]
    );
    assert_eq!(
        scores("```{\"scores\":[{\"index\":1.0,\"score\":\"7\"}]}```", 1),
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
        &[rated(40.0), rated(60.0)],
    );
    assert_eq!(
        ranked.iter().map(|c| c.start).collect::<Vec<_>>(),
        [10.0, 50.0]
    );
    assert!(ranked.iter().all(|c| c.score == 50));
}

#[tokio::test]
async fn the_model_writes_the_titles_it_can() {
    // Issue 28: with the re-ranker configured it writes the title too;
    // a title that is too wide, two lines or empty keeps the local one.
    let wide_zh = "什么是文字冒险游戏".repeat(4); // 36 characters, 72 wide
    let answer = json!({ "scores": [
        { "index": 1, "score": 90, "title": "  “Why most startups fail in year one”  " },
        { "index": 2, "score": 80, "title": "x".repeat(MAX_TITLE_CHARS + 1) },
        { "index": 3, "score": 70, "title": "Two\nlines" },
        { "index": 4, "score": 60, "title": "" },
        { "index": 5, "score": 50, "title": wide_zh },
        { "index": 6, "score": 40, "title": "什么是文字冒险游戏呢？" },
        { "index": 7, "score": 30 },
    ]})
    .to_string();
    let (url, server) = serve_once("200 OK", chat_body(&answer)).await;
    let candidates: Vec<Candidate> = (0..7)
        .map(|i| candidate(f64::from(i) * 100.0, 50))
        .collect();
    let texts: Vec<String> = (1..=7).map(|i| format!("clip {i} text")).collect();
    let ranked = rerank(
        candidates,
        &texts,
        None,
        &config(url, Duration::from_secs(10)),
    )
    .await
    .unwrap();
    let titles: Vec<&str> = ranked.iter().map(|c| c.title.as_str()).collect();
    assert_eq!(
        titles,
        [
            "Why most startups fail in year one",
            "Clip at 100",
            "Clip at 200",
            "Clip at 300",
            "Clip at 400",
            "什么是文字冒险游戏呢？",
            "Clip at 600",
        ]
    );
    // The prompt asks for the titles.
    let request = server.await.unwrap();
    let body: Value =
        serde_json::from_str(&request[request.find("\r\n\r\n").unwrap() + 4..]).unwrap();
    let user = body["messages"][1]["content"].as_str().unwrap();
    assert!(
        user.contains("\"title\"") && user.contains("at most 60 characters"),
        "{user}"
    );
    assert!(body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .contains("title"));
}
