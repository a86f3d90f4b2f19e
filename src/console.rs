//! The web console: `web/dist` (built by `make console` with npm) embedded
//! in the binary. Asset paths are served with their MIME type; every other
//! path that is not routed elsewhere (`/api`, `/docs`, `/media`, ...) gets
//! `index.html`, and the console picks the page (client-side routing).
//! A binary built without the assets serves a page that says how to build
//! them; the API works either way.

use poem::http::{header, Method, StatusCode};
use poem::{handler, IntoResponse, Request, Response};

#[derive(rust_embed::RustEmbed)]
#[folder = "web/dist/"]
#[allow_missing = true]
struct Assets;

const MISSING: &str = "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
<title>Clipforge</title></head><body><main><h1>Clipforge</h1>\
<p>This binary was built without the web console. Run <code>make console</code> \
(needs npm), then rebuild with <code>make build</code>.</p>\
<p>The API is at <a href=\"/api/openapi.json\">/api</a> and its documentation at \
<a href=\"/docs\">/docs</a>.</p></main></body></html>";

/// Whether the console's assets are in this binary.
pub fn embedded() -> bool {
    Assets::get("index.html").is_some()
}

fn file(path: &str, req: &Request) -> Option<Response> {
    let f = Assets::get(path)?;
    // The build writes a gzip copy of each script and stylesheet.
    let accepts_gzip = req
        .header(header::ACCEPT_ENCODING)
        .is_some_and(|a| a.split(',').any(|e| e.trim().starts_with("gzip")));
    let gz = accepts_gzip
        .then(|| Assets::get(&format!("{path}.gz")))
        .flatten();
    let etag = format!(
        "\"{}{}\"",
        hex::encode(&f.metadata.sha256_hash()[..16]),
        if gz.is_some() { "-gz" } else { "" }
    );
    // Vite names bundles by content hash: cache them for good. index.html
    // is checked every time so a new build is picked up at once.
    let cache = if path.starts_with("assets/") {
        "public, max-age=31536000, immutable"
    } else {
        "no-cache"
    };
    let mime = mime_guess::from_path(path).first_or_octet_stream();
    let mut builder = Response::builder()
        .header(header::ETAG, etag.clone())
        .header(header::CACHE_CONTROL, cache)
        .header(header::VARY, "accept-encoding")
        .header("x-content-type-options", "nosniff");
    if req.header(header::IF_NONE_MATCH) == Some(etag.as_str()) {
        return Some(builder.status(StatusCode::NOT_MODIFIED).finish());
    }
    let data = match gz {
        Some(gz) => {
            builder = builder.header(header::CONTENT_ENCODING, "gzip");
            gz.data
        }
        None => f.data,
    };
    Some(builder.content_type(mime.as_ref()).body(data.into_owned()))
}

/// `GET /` and every path no other route takes.
#[handler]
pub fn ui(req: &Request) -> Response {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return StatusCode::METHOD_NOT_ALLOWED.into_response();
    }
    let path = req.uri().path().trim_start_matches('/');
    if !path.is_empty() {
        if let Some(resp) = file(path, req) {
            return resp;
        }
        // A missing bundle must not turn into the page (a stale tab would
        // run HTML as a script); API paths never reach here.
        if path.starts_with("assets/") {
            return StatusCode::NOT_FOUND.into_response();
        }
    }
    file("index.html", req).unwrap_or_else(|| {
        Response::builder()
            .content_type("text/html; charset=utf-8")
            .header(header::CACHE_CONTROL, "no-cache")
            .body(MISSING)
    })
}

/// The platforms send the user's browser to the OAuth callback: a browser
/// (it asks for HTML) is sent on to the console's integrations page with
/// the outcome; API clients keep the JSON answer.
pub async fn callback_for_browser(path: &str, accepts_html: bool, resp: Response) -> Response {
    let Some(provider) = path
        .strip_prefix("/api/integrations/")
        .and_then(|p| p.strip_suffix("/callback"))
    else {
        return resp;
    };
    if !accepts_html || provider.contains('/') {
        return resp;
    }
    let query = if resp.status().is_success() {
        format!("connected={}", encode(provider))
    } else {
        let body = resp.into_body().into_string().await.unwrap_or_default();
        let message = serde_json::from_str::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v["message"].as_str().map(str::to_string))
            .unwrap_or_else(|| "the platform did not connect".into());
        format!("error={}", encode(&message))
    };
    Response::builder()
        .status(StatusCode::SEE_OTHER)
        .header(header::LOCATION, format!("/integrations?{query}"))
        .finish()
}

fn encode(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}
