//! Steering and reasons through the API (issue 15 item 5): a project made
//! with a `prompt` from espeak-ng speech on two subjects gets clips that
//! favour the prompt's subject, each with a `reason`, sub-`scores` and a
//! headline title; the server's re-ranker (an OpenAI-compatible endpoint,
//! faked here) is asked with the prompt; a too-long prompt is a 400.

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use poem::web::Data;
use serde_json::{json, Value};

/// Words a headline never ends on (a subset of `titles.rs`'s list).
const DANGLING: &[&str] = &[
    "a", "an", "the", "and", "or", "but", "of", "to", "in", "on", "at", "for", "with", "because",
    "my", "your", "their", "that", "is",
];

const SPEECH: &str = "Ocean tides follow the pull of the moon on the seas. \
    The moon drags a bulge of seawater around the planet every day. \
    Coastal towns see a high tide twice in each lunar day. \
    Spring tides happen when the sun and the moon line up. \
    Sailors read tide tables before they leave the harbour. \
    Fresh pasta needs only flour, eggs and a little patience. \
    Knead the pasta dough until it feels smooth and elastic, because a rough dough tears when you roll it thin. \
    The tomato sauce starts with garlic and good olive oil. \
    Simmer the tomato sauce slowly while the pasta water boils. \
    Toss the fresh pasta in the sauce and serve it at once.";

/// A fake chat-completions endpoint: keeps every request body and gives
/// every candidate the same score (so the local order stands).
#[poem::handler]
fn chat(body: String, seen: Data<&Arc<Mutex<Vec<Value>>>>) -> poem::web::Json<Value> {
    let request: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let user = request["messages"][1]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    seen.lock().unwrap().push(request);
    let count = user.matches("Candidate ").count();
    let scores: Vec<Value> = (1..=count)
        .map(|i| json!({ "index": i, "score": 50 }))
        .collect();
    let content = json!({ "scores": scores }).to_string();
    poem::web::Json(json!({
        "choices": [{ "index": 0, "message": { "role": "assistant", "content": content } }]
    }))
}

async fn fake_reranker(seen: Arc<Mutex<Vec<Value>>>) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let acceptor = poem::listener::TcpAcceptor::from_tokio(listener).unwrap();
    let app = poem::EndpointExt::data(
        poem::Route::new().at("/v1/chat/completions", poem::post(chat)),
        seen,
    );
    tokio::spawn(poem::Server::new_with_acceptor(acceptor).run(app));
    port
}

#[tokio::test(flavor = "multi_thread")]
async fn a_prompt_steers_clips_and_every_clip_says_why() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let port = fake_reranker(seen.clone()).await;
    let url = format!("http://127.0.0.1:{port}/v1");
    let app = spawn_app_with(
        tempfile::tempdir().unwrap(),
        &[("CLIPFORGE_PIPELINE_RERANK_URL", url.as_str())],
    );
    let token = app.sign_up("steer@example.com").await;
    let media = tempfile::tempdir().unwrap();
    let video = speech_video_saying(media.path(), SPEECH, 160);
    let (s, up) = upload(&app, &token, &video, "talk.mp4").await;
    assert_eq!(s, 200, "{up}");
    let key = up["fileKey"].as_str().unwrap().to_string();

    // Too long a prompt: 400 with the uniform error body, nothing created.
    let (s, body) = app
        .post(
            "/api/projects",
            &token,
            json!({ "fileKey": key, "prompt": "pasta ".repeat(100) }),
        )
        .await;
    assert_error(s, &body, 400);
    assert!(
        body["message"].as_str().unwrap().contains("prompt"),
        "{body}"
    );

    let prompt = "the part about cooking fresh pasta with tomato sauce";
    let (s, created) = app
        .post(
            "/api/projects",
            &token,
            json!({ "fileKey": key, "clipDurationPreset": "15-30", "prompt": prompt }),
        )
        .await;
    assert_eq!(s, 201, "{created}");
    assert_eq!(created["project"]["prompt"], prompt);
    let id = created["projectId"].as_str().unwrap().to_string();
    follow_to_completion(&app, &token, &id).await;

    let (s, got) = app.get(&format!("/api/projects/{id}"), &token).await;
    assert_eq!(s, 200, "{got}");
    assert_eq!(got["project"]["prompt"], prompt);
    let clips = got["clips"].as_array().unwrap();
    assert!(!clips.is_empty(), "{got}");
    for c in clips {
        let title = c["title"].as_str().unwrap();
        let last = title
            .rsplit(' ')
            .next()
            .unwrap()
            .trim_matches(|ch: char| !ch.is_alphanumeric())
            .to_lowercase();
        assert!(
            !title.is_empty() && title.chars().count() <= 60 && !title.ends_with(','),
            "{title}"
        );
        assert!(
            !DANGLING.contains(&last.as_str()),
            "title ends on {last:?}: {title}"
        );
        assert!(title.starts_with(|ch: char| ch.is_uppercase()), "{title}");
        let reason = c["reason"].as_str().unwrap();
        assert!(reason.len() > 20 && reason.ends_with('.'), "{reason}");
        let scores = &c["scores"];
        for k in ["hook", "completeness", "emotion", "pace", "promptMatch"] {
            let v = scores[k]
                .as_u64()
                .unwrap_or_else(|| panic!("{k} in {scores}"));
            assert!(v <= 100, "{scores}");
        }
        eprintln!("{} | {} | {} | {scores}", c["score"], title, reason);
    }
    // The best clip is about the prompt's subject, and says so.
    let best = clips
        .iter()
        .max_by_key(|c| c["score"].as_u64().unwrap())
        .unwrap();
    let text: String = best["transcripts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["text"].as_str().unwrap().to_lowercase())
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        text.contains("pasta") || text.contains("sauce"),
        "best clip is not about the prompt: {text}"
    );
    assert!(
        best["scores"]["promptMatch"].as_u64().unwrap() >= 40,
        "{best}"
    );
    assert!(
        best["reason"]
            .as_str()
            .unwrap()
            .starts_with("Matches your prompt on "),
        "{best}"
    );

    // The service's re-ranker was asked, with the prompt.
    let requests = seen.lock().unwrap().clone();
    assert_eq!(requests.len(), 1, "{requests:?}");
    let user = requests[0]["messages"][1]["content"].as_str().unwrap();
    assert!(user.contains(prompt), "{user}");
}
