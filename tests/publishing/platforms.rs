//! A local HTTP server that speaks the wire format of the three platforms'
//! OAuth token endpoints and upload APIs (Google/YouTube Data API v3
//! resumable uploads, TikTok Content Posting API, Instagram Graph API
//! Reels), with injectable faults, held responses (to crash the client
//! mid-request) and a count of what was actually published.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use poem::http::{Method, StatusCode};
use poem::{Request, Response};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

#[derive(Clone, Debug)]
pub enum Fault {
    /// Answer this status (with `Retry-After` seconds when given) and do nothing.
    Status(u16, Option<u64>),
}

#[derive(Default)]
struct Upload {
    title: String,
    total: usize,
    bytes: Vec<u8>,
    done: Option<String>,
}

impl Inner {
    /// Answers are no longer held back (held ones finish as they were).
    pub fn holds_clear(&mut self) {
        self.holds.clear();
    }
}

#[derive(Default)]
pub struct Inner {
    next: u64,
    /// access token → (provider, valid)
    tokens: HashMap<String, (String, bool)>,
    refresh_tokens: HashMap<String, String>,
    faults: HashMap<String, VecDeque<Fault>>,
    holds: HashMap<String, Duration>,
    pub hits: HashMap<String, u32>,
    /// (provider, title, platform id) of every publication.
    pub published: Vec<(String, String, String)>,
    pub refreshes: HashMap<String, u32>,
    pub challenge: Option<String>,
    pub verifier_ok: Option<bool>,
    yt: HashMap<String, Upload>,
    tt: HashMap<String, Upload>,
    /// container → (caption, status_code, polled)
    ig: HashMap<String, (String, String, u32)>,
    pub token_ttl: i64,
    /// Titles starting "Refused once" already refused: TikTok refuses such
    /// a post's first init (403), as a platform refuses content, and takes
    /// it when it is tried again (the console's retry of a failed post).
    refused: std::collections::HashSet<String>,
}

pub struct Platforms {
    pub base: String,
    pub inner: Mutex<Inner>,
    http: reqwest::Client,
}

impl Platforms {
    /// Starts the server on a thread of its own (it outlives app restarts).
    pub fn start() -> Arc<Platforms> {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Runtime::new().unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                let port = listener.local_addr().unwrap().port();
                drop(listener);
                let p = Arc::new(Platforms {
                    base: format!("http://127.0.0.1:{port}"),
                    inner: Mutex::new(Inner {
                        token_ttl: 3600,
                        ..Default::default()
                    }),
                    http: reqwest::Client::new(),
                });
                tx.send(p.clone()).unwrap();
                let ep = poem::endpoint::make(move |req: Request| {
                    let p = p.clone();
                    async move { Ok::<Response, poem::Error>(p.handle(req).await) }
                });
                poem::Server::new(poem::listener::TcpListener::bind(format!(
                    "127.0.0.1:{port}"
                )))
                .run(ep)
                .await
                .unwrap();
            });
        });
        let p = rx.recv().unwrap();
        // Wait until it accepts connections.
        for _ in 0..100 {
            if std::net::TcpStream::connect(p.base.trim_start_matches("http://")).is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        p
    }

    /// Environment for the app: clients and base URLs of the three platforms.
    pub fn env(&self) -> Vec<(String, String)> {
        let b = &self.base;
        [
            ("YOUTUBE_CLIENT_ID", "yt-client".to_string()),
            ("YOUTUBE_CLIENT_SECRET", "yt-secret".into()),
            ("YOUTUBE_AUTH_URL", format!("{b}/google/auth")),
            ("YOUTUBE_TOKEN_URL", format!("{b}/google/token")),
            ("YOUTUBE_API_URL", format!("{b}/google")),
            ("TIKTOK_CLIENT_ID", "tt-client".into()),
            ("TIKTOK_CLIENT_SECRET", "tt-secret".into()),
            ("TIKTOK_AUTH_URL", format!("{b}/tiktok/auth/")),
            ("TIKTOK_TOKEN_URL", format!("{b}/tiktok/v2/oauth/token/")),
            ("TIKTOK_API_URL", format!("{b}/tiktok")),
            ("INSTAGRAM_CLIENT_ID", "ig-client".into()),
            ("INSTAGRAM_CLIENT_SECRET", "ig-secret".into()),
            ("INSTAGRAM_AUTH_URL", format!("{b}/ig/authorize")),
            ("INSTAGRAM_TOKEN_URL", format!("{b}/ig/oauth/access_token")),
            ("INSTAGRAM_API_URL", format!("{b}/ig")),
            ("BACKOFF_BASE_MS", "200".into()),
            ("BACKOFF_MAX_MS", "1000".into()),
            ("MAX_ATTEMPTS", "4".into()),
            ("POLL_INTERVAL_MS", "100".into()),
            ("TIKTOK_CHUNK_BYTES", "262144".into()),
            ("PAST_GRACE_SECS", "5".into()),
        ]
        .into_iter()
        .map(|(k, v)| (format!("CLIPFORGE_PUBLISH_{k}"), v))
        .collect()
    }

    pub fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap()
    }

    pub fn fault(&self, route: &str, f: Fault) {
        self.lock()
            .faults
            .entry(route.into())
            .or_default()
            .push_back(f);
    }

    /// Holds the answer of `route` (after its effect) for `d`; the route
    /// `published` holds whichever answer completes a publication.
    pub fn hold(&self, route: &str, d: Duration) {
        self.lock().holds.insert(route.into(), d);
    }

    pub fn published(&self, provider: &str) -> Vec<(String, String, String)> {
        self.lock()
            .published
            .iter()
            .filter(|p| p.0 == provider)
            .cloned()
            .collect()
    }

    pub fn hits(&self, route: &str) -> u32 {
        self.lock().hits.get(route).copied().unwrap_or(0)
    }

    /// Marks every access token issued so far as expired.
    pub fn expire_tokens(&self) {
        for v in self.lock().tokens.values_mut() {
            v.1 = false;
        }
    }

    pub fn tokens_issued(&self) -> Vec<String> {
        let g = self.lock();
        g.tokens
            .keys()
            .chain(g.refresh_tokens.keys())
            .cloned()
            .collect()
    }

    fn issue(&self, provider: &str) -> (String, String, i64) {
        let mut g = self.lock();
        g.next += 1;
        let (at, rt) = (
            format!("{provider}-at-{}", g.next),
            format!("{provider}-rt-{}", g.next),
        );
        g.tokens.insert(at.clone(), (provider.into(), true));
        g.refresh_tokens.insert(rt.clone(), provider.into());
        (at, rt, g.token_ttl)
    }

    fn valid(&self, token: &str) -> bool {
        self.lock().tokens.get(token).map(|t| t.1).unwrap_or(false)
    }

    async fn handle(self: Arc<Self>, req: Request) -> Response {
        let method = req.method().clone();
        let path = req.uri().path().to_string();
        let query: HashMap<String, String> = req.uri().query().map(url_pairs).unwrap_or_default();
        let header = |n: &str| req.header(n).map(str::to_string);
        let bearer = header("authorization")
            .and_then(|h| h.strip_prefix("Bearer ").map(str::to_string))
            .unwrap_or_default();
        let content_range = header("content-range");
        let upload_len = header("x-upload-content-length");
        let body = req.into_body().into_vec().await.unwrap_or_default();
        let form = url_pairs(&String::from_utf8_lossy(&body));
        let route = route_name(&method, &path, &query, content_range.as_deref());
        *self.lock().hits.entry(route.clone()).or_default() += 1;
        let fault = self
            .lock()
            .faults
            .get_mut(&route)
            .and_then(|q| q.pop_front());
        if let Some(Fault::Status(s, retry)) = fault {
            let mut r = Response::builder()
                .status(StatusCode::from_u16(s).unwrap())
                .content_type("application/json");
            if let Some(secs) = retry {
                r = r.header("retry-after", secs.to_string());
            }
            return r.body(
                json!({"error": {"code": s, "message": format!("injected {s}")}}).to_string(),
            );
        }
        let before = self.lock().published.len();
        let resp = self
            .clone()
            .route(
                &route,
                &path,
                &query,
                &form,
                &body,
                &bearer,
                content_range,
                upload_len,
            )
            .await;
        let hold = {
            let g = self.lock();
            let done = g.published.len() > before;
            g.holds
                .get(&route)
                .or(g.holds.get("published").filter(|_| done))
                .copied()
        };
        if let Some(d) = hold {
            tokio::time::sleep(d).await;
        }
        resp
    }

    #[allow(clippy::too_many_arguments)]
    async fn route(
        self: Arc<Self>,
        route: &str,
        path: &str,
        query: &HashMap<String, String>,
        form: &HashMap<String, String>,
        body: &[u8],
        bearer: &str,
        content_range: Option<String>,
        upload_len: Option<String>,
    ) -> Response {
        let json_body: Value = serde_json::from_slice(body).unwrap_or_default();
        match route {
            // The consent page: the user says yes at once and the browser
            // goes back to the app with a code (PKCE challenge remembered).
            "authorize" => {
                let (Some(redirect), Some(state)) = (query.get("redirect_uri"), query.get("state")) else {
                    return err(400, "redirect_uri and state are required");
                };
                if let Some(c) = query.get("code_challenge") {
                    self.lock().challenge = Some(c.clone());
                }
                let Ok(to) = reqwest::Url::parse_with_params(redirect, &[("code", "good-code"), ("state", state.as_str())]) else {
                    return err(400, "bad redirect_uri");
                };
                Response::builder()
                    .status(StatusCode::FOUND)
                    .header("location", to.as_str())
                    .finish()
            }
            "google_token" | "tiktok_token" => {
                let provider = if route == "google_token" { "youtube" } else { "tiktok" };
                let id_field = if provider == "tiktok" { "client_key" } else { "client_id" };
                if form.get(id_field).map(String::as_str) != Some(if provider == "tiktok" { "tt-client" } else { "yt-client" }) {
                    return err(401, "invalid_client");
                }
                match form.get("grant_type").map(String::as_str) {
                    Some("authorization_code") => {
                        if form.get("code").map(String::as_str) != Some("good-code") {
                            return oauth_err("invalid_grant");
                        }
                        if provider == "youtube" {
                            let mut g = self.lock();
                            let ok = match (&g.challenge, form.get("code_verifier")) {
                                (Some(c), Some(v)) => *c == base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(v.as_bytes())),
                                _ => false,
                            };
                            g.verifier_ok = Some(ok);
                            if !ok {
                                return oauth_err("invalid_grant");
                            }
                        }
                    }
                    Some("refresh_token") => {
                        let rt = form.get("refresh_token").cloned().unwrap_or_default();
                        if !self.lock().refresh_tokens.contains_key(&rt) {
                            return oauth_err("invalid_grant");
                        }
                        *self.lock().refreshes.entry(provider.into()).or_default() += 1;
                    }
                    _ => return oauth_err("unsupported_grant_type"),
                }
                let (at, rt, ttl) = self.issue(provider);
                json(json!({"access_token": at, "refresh_token": rt, "expires_in": ttl, "refresh_expires_in": 31_536_000, "open_id": "tt-open-id", "scope": "video.publish,video.upload", "token_type": "Bearer"}))
            }
            "ig_token" => {
                if form.get("code").map(String::as_str) != Some("good-code") || form.get("client_secret").map(String::as_str) != Some("ig-secret") {
                    return err(400, "Invalid authorization code");
                }
                let (at, _, _) = self.issue("instagram-short");
                json(json!({"access_token": at, "user_id": 17841400000000001u64, "permissions": "instagram_business_basic,instagram_business_content_publish"}))
            }
            "ig_exchange" => {
                if !self.valid(query.get("access_token").map(String::as_str).unwrap_or("")) {
                    return ig_token_err();
                }
                let (at, _, ttl) = self.issue("instagram");
                json(json!({"access_token": at, "token_type": "bearer", "expires_in": ttl}))
            }
            "ig_refresh" => {
                let known = self.lock().tokens.contains_key(query.get("access_token").map(String::as_str).unwrap_or(""));
                if !known {
                    return ig_token_err();
                }
                *self.lock().refreshes.entry("instagram".into()).or_default() += 1;
                let (at, _, ttl) = self.issue("instagram");
                json(json!({"access_token": at, "token_type": "bearer", "expires_in": ttl}))
            }
            "yt_channels" => {
                if !self.valid(bearer) {
                    return err(401, "Invalid Credentials");
                }
                json(json!({"kind": "youtube#channelListResponse", "items": [{"id": "UC-ana", "snippet": {"title": "Ana's channel"}}]}))
            }
            "yt_init" => {
                if !self.valid(bearer) {
                    return err(401, "Invalid Credentials");
                }
                let title = json_body["snippet"]["title"].as_str().unwrap_or("").to_string();
                if title.is_empty() || json_body["status"]["privacyStatus"].as_str().is_none() {
                    return err(400, "missing snippet.title or status.privacyStatus");
                }
                let total: usize = upload_len.and_then(|v| v.parse().ok()).unwrap_or(0);
                let mut g = self.lock();
                g.next += 1;
                let id = format!("sess{}", g.next);
                g.yt.insert(id.clone(), Upload { title, total, ..Default::default() });
                Response::builder()
                    .header("location", format!("{}/google/upload/youtube/v3/videos?uploadType=resumable&upload_id={id}", self.base))
                    .body("")
            }
            "yt_query" | "yt_put" => {
                if !self.valid(bearer) {
                    return err(401, "Invalid Credentials");
                }
                let id = query.get("upload_id").cloned().unwrap_or_default();
                let mut g = self.lock();
                let published_before = g.published.len();
                let Some(u) = g.yt.get_mut(&id) else { return err(404, "no such upload session") };
                if route == "yt_put" && u.done.is_none() {
                    let start = content_range
                        .as_deref()
                        .and_then(|r| r.strip_prefix("bytes ")?.split('-').next()?.parse::<usize>().ok())
                        .unwrap_or(0);
                    if start != u.bytes.len() {
                        return err(400, "upload offset mismatch");
                    }
                    u.bytes.extend_from_slice(body);
                    if u.bytes.len() >= u.total {
                        if !u.bytes.windows(4).take(64).any(|w| w == b"ftyp") {
                            return err(400, "not an MP4");
                        }
                        let vid = format!("yt-video-{}", published_before + 1);
                        u.done = Some(vid.clone());
                        let title = u.title.clone();
                        g.published.push(("youtube".into(), title, vid));
                    }
                }
                let u = g.yt.get(&id).unwrap();
                match &u.done {
                    Some(vid) => Response::builder()
                        .status(StatusCode::OK)
                        .content_type("application/json")
                        .body(json!({"kind": "youtube#video", "id": vid, "snippet": {"title": u.title}, "status": {"uploadStatus": "uploaded"}}).to_string()),
                    None if u.bytes.is_empty() => Response::builder().status(StatusCode::PERMANENT_REDIRECT).body(""),
                    None => Response::builder()
                        .status(StatusCode::PERMANENT_REDIRECT)
                        .header("range", format!("bytes=0-{}", u.bytes.len() - 1))
                        .body(""),
                }
            }
            "tt_creator" | "tt_init" | "tt_status" if !self.valid(bearer) => Response::builder()
                .status(StatusCode::UNAUTHORIZED)
                .content_type("application/json")
                .body(json!({"data": {}, "error": {"code": "access_token_invalid", "message": "The access token is invalid or not found in the request.", "log_id": "x"}}).to_string()),
            "tt_creator" => tt(json!({"creator_username": "ana", "privacy_level_options": ["PUBLIC_TO_EVERYONE", "MUTUAL_FOLLOW_FRIENDS", "SELF_ONLY"], "max_video_post_duration_sec": 600})),
            "tt_init" => {
                let si = &json_body["source_info"];
                let (size, chunk, count) = (si["video_size"].as_u64().unwrap_or(0), si["chunk_size"].as_u64().unwrap_or(0), si["total_chunk_count"].as_u64().unwrap_or(0));
                let expected = if size <= chunk { 1 } else { size / chunk.max(1) };
                if si["source"] != "FILE_UPLOAD" || size == 0 || count != expected || json_body["post_info"]["privacy_level"] != "PUBLIC_TO_EVERYONE" {
                    return Response::builder().status(StatusCode::BAD_REQUEST).content_type("application/json")
                        .body(json!({"error": {"code": "invalid_params", "message": "bad source_info or post_info"}}).to_string());
                }
                let title = json_body["post_info"]["title"].as_str().unwrap_or("");
                if title.starts_with("Refused once") && self.lock().refused.insert(title.to_string()) {
                    return Response::builder().status(StatusCode::FORBIDDEN).content_type("application/json")
                        .body(json!({"error": {"code": "spam_risk_too_many_posts", "message": "The daily post cap from the API is reached for the current user.", "log_id": "x"}}).to_string());
                }
                let mut g = self.lock();
                g.next += 1;
                let id = format!("v_pub_file~{}", g.next);
                g.tt.insert(id.clone(), Upload { title: json_body["post_info"]["title"].as_str().unwrap_or("").into(), total: size as usize, ..Default::default() });
                tt(json!({"publish_id": id, "upload_url": format!("{}/tiktok/upload/{id}", self.base)}))
            }
            "tt_upload" => {
                let id = path.trim_start_matches("/tiktok/upload/").to_string();
                let mut g = self.lock();
                let n = g.published.len();
                let Some(u) = g.tt.get_mut(&id) else { return err(404, "unknown upload") };
                let start = content_range.as_deref().and_then(|r| r.strip_prefix("bytes ")?.split('-').next()?.parse::<usize>().ok());
                if start != Some(u.bytes.len()) {
                    return err(416, "chunk out of order");
                }
                u.bytes.extend_from_slice(body);
                if u.bytes.len() < u.total {
                    return Response::builder().status(StatusCode::PARTIAL_CONTENT).body("");
                }
                let title = u.title.clone();
                u.done = Some(format!("{}", 7_300_000_000_000_000_000u64 + n as u64 + 1));
                let pid = u.done.clone().unwrap();
                g.published.push(("tiktok".into(), title, pid));
                Response::builder().status(StatusCode::CREATED).body("")
            }
            "tt_status" => {
                let id = json_body["publish_id"].as_str().unwrap_or("");
                let g = self.lock();
                let Some(u) = g.tt.get(id) else {
                    return Response::builder().status(StatusCode::BAD_REQUEST).content_type("application/json")
                        .body(json!({"error": {"code": "invalid_publish_id", "message": "unknown"}}).to_string());
                };
                match &u.done {
                    Some(post) => tt(json!({"status": "PUBLISH_COMPLETE", "uploaded_bytes": u.bytes.len(), "publicaly_available_post_id": [post.parse::<u64>().unwrap()], "fail_reason": ""})),
                    None => tt(json!({"status": "PROCESSING_UPLOAD", "uploaded_bytes": u.bytes.len(), "fail_reason": ""})),
                }
            }
            "ig_media" | "ig_publish" | "ig_status" if !self.valid(form.get("access_token").or(query.get("access_token")).map(String::as_str).unwrap_or("")) => ig_token_err(),
            "ig_media" => {
                if form.get("media_type").map(String::as_str) != Some("REELS") {
                    return err(400, "media_type must be REELS");
                }
                let url = form.get("video_url").cloned().unwrap_or_default();
                let ok = match self.http.get(&url).send().await {
                    Ok(r) if r.status().is_success() => r.bytes().await.map(|b| b.windows(4).take(64).any(|w| w == b"ftyp")).unwrap_or(false),
                    _ => false,
                };
                let mut g = self.lock();
                g.next += 1;
                let id = format!("1790{}", g.next);
                let status = if ok { "IN_PROGRESS" } else { "ERROR" };
                g.ig.insert(id.clone(), (form.get("caption").cloned().unwrap_or_default(), status.into(), 0));
                json(json!({"id": id}))
            }
            "ig_status" => {
                let id = path.rsplit('/').next().unwrap_or("");
                let mut g = self.lock();
                let Some(c) = g.ig.get_mut(id) else { return err(400, "Unsupported get request") };
                c.2 += 1;
                if c.1 == "IN_PROGRESS" && c.2 > 1 {
                    c.1 = "FINISHED".into();
                }
                json(json!({"status_code": c.1, "id": id}))
            }
            "ig_publish" => {
                let id = form.get("creation_id").cloned().unwrap_or_default();
                let mut g = self.lock();
                let Some(c) = g.ig.get_mut(&id) else { return err(400, "invalid creation_id") };
                if c.1 != "FINISHED" {
                    return err(400, &format!("media is not ready to publish ({})", c.1));
                }
                c.1 = "PUBLISHED".into();
                let caption = c.0.clone();
                let media = format!("1800{}", g.published.len() + 1);
                g.published.push(("instagram".into(), caption, media.clone()));
                json(json!({"id": media}))
            }
            _ => err(404, &format!("no route {route} {path}")),
        }
    }
}

fn route_name(
    method: &Method,
    path: &str,
    query: &HashMap<String, String>,
    content_range: Option<&str>,
) -> String {
    let m = method.as_str();
    let name = match (m, path) {
        ("GET", "/google/auth" | "/tiktok/auth/" | "/ig/authorize") => "authorize",
        ("POST", "/google/token") => "google_token",
        ("GET", "/google/youtube/v3/channels") => "yt_channels",
        ("POST", "/google/upload/youtube/v3/videos")
            if query.get("uploadType").map(String::as_str) == Some("resumable") =>
        {
            "yt_init"
        }
        ("PUT", "/google/upload/youtube/v3/videos")
            if content_range.is_some_and(|r| r.starts_with("bytes */")) =>
        {
            "yt_query"
        }
        ("PUT", "/google/upload/youtube/v3/videos") => "yt_put",
        ("POST", "/tiktok/v2/oauth/token/") => "tiktok_token",
        ("POST", "/tiktok/v2/post/publish/creator_info/query/") => "tt_creator",
        ("POST", "/tiktok/v2/post/publish/video/init/") => "tt_init",
        ("POST", "/tiktok/v2/post/publish/status/fetch/") => "tt_status",
        ("PUT", p) if p.starts_with("/tiktok/upload/") => "tt_upload",
        ("POST", "/ig/oauth/access_token") => "ig_token",
        ("GET", "/ig/access_token") => "ig_exchange",
        ("GET", "/ig/refresh_access_token") => "ig_refresh",
        ("POST", p) if p.starts_with("/ig/v21.0/") && p.ends_with("/media") => "ig_media",
        ("POST", p) if p.starts_with("/ig/v21.0/") && p.ends_with("/media_publish") => "ig_publish",
        ("GET", p) if p.starts_with("/ig/v21.0/") => "ig_status",
        _ => "unknown",
    };
    name.to_string()
}

fn url_pairs(q: &str) -> HashMap<String, String> {
    q.split('&')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (decode(k), decode(v)))
        .collect()
}

fn decode(s: &str) -> String {
    percent_encoding::percent_decode_str(&s.replace('+', " "))
        .decode_utf8_lossy()
        .into_owned()
}

fn json(v: Value) -> Response {
    Response::builder()
        .content_type("application/json")
        .body(v.to_string())
}

fn tt(data: Value) -> Response {
    json(json!({"data": data, "error": {"code": "ok", "message": "", "log_id": "202401010000"}}))
}

fn err(status: u16, message: &str) -> Response {
    Response::builder()
        .status(StatusCode::from_u16(status).unwrap())
        .content_type("application/json")
        .body(json!({"error": {"code": status, "message": message}}).to_string())
}

fn oauth_err(code: &str) -> Response {
    Response::builder()
        .status(StatusCode::BAD_REQUEST)
        .content_type("application/json")
        .body(json!({"error": code, "error_description": "The authorization grant is invalid, expired or revoked."}).to_string())
}

fn ig_token_err() -> Response {
    Response::builder()
        .status(StatusCode::BAD_REQUEST)
        .content_type("application/json")
        .body(json!({"error": {"message": "Error validating access token: Session has expired.", "type": "OAuthException", "code": 190}}).to_string())
}
