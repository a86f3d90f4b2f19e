//! `/media/<key>`: local media through signed, expiring URLs
//! (`?expires=&sig=`), and stable links (`?sig=` only, see
//! [`clipforge_actors::storage::links`]) answered with a 307 to a fresh
//! signed URL of the object store (local or S3).

use std::path::Path;
use std::time::Duration;

use poem::http::{header, StatusCode};
use poem::web::{Data, Path as PPath, Query};
use poem::{handler, FromRequest, IntoResponse, Request, Response};

use crate::error_body::error_response;
use crate::state::State;

#[derive(serde::Deserialize)]
pub struct Signed {
    /// Unix seconds; absent on a stable link.
    expires: Option<u64>,
    sig: String,
}

#[handler]
pub async fn media(
    state: Data<&State>,
    key: PPath<String>,
    q: Query<Signed>,
    req: &Request,
) -> Response {
    let key = percent_encoding::percent_decode_str(&key.0)
        .decode_utf8_lossy()
        .into_owned();
    match q.expires {
        None => redirect(&state, &key, &q.sig).await,
        Some(expires) => serve_local(&state, &key, expires, &q.sig, req).await,
    }
}

/// A stable link: 307 to a URL of the object that expires after
/// `storage.url_ttl_secs`; 404 once the object is gone.
async fn redirect(state: &State, key: &str, sig: &str) -> Response {
    if !state.links.verify(key, sig) {
        return error_response(
            StatusCode::FORBIDDEN,
            "invalid_signature",
            "the link is invalid",
        );
    }
    let not_found = || error_response(StatusCode::NOT_FOUND, "not_found", "media not found");
    let unavailable = |e: clipforge_actors::storage::kv::StorageError| {
        tracing::warn!(error = %e, "media link: object storage failed");
        error_response(
            StatusCode::SERVICE_UNAVAILABLE,
            "storage_unavailable",
            "media storage is not answering; try again",
        )
    };
    match state.objects.size(key).await {
        Ok(Some(_)) => {}
        Ok(None) => return not_found(),
        Err(e) => return unavailable(e),
    }
    let ttl = Duration::from_secs(state.config.storage.url_ttl_secs);
    match state.objects.url(key, ttl).await {
        Ok(url) => Response::builder()
            .status(StatusCode::TEMPORARY_REDIRECT)
            .header(header::LOCATION, url)
            .header(header::CACHE_CONTROL, "private, no-store")
            .finish(),
        Err(e) => unavailable(e),
    }
}

/// A local signed URL: the file, with ranges and conditional requests.
async fn serve_local(state: &State, key: &str, expires: u64, sig: &str, req: &Request) -> Response {
    let Some(local) = state.local.as_ref() else {
        return error_response(
            StatusCode::NOT_FOUND,
            "not_found",
            "media is served by the object store",
        );
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    if !local.verify(key, expires, sig, now) {
        return error_response(
            StatusCode::FORBIDDEN,
            "invalid_signature",
            "the link is invalid or has expired",
        );
    }
    let Ok(path) = local.path_of(key) else {
        return error_response(StatusCode::NOT_FOUND, "not_found", "media not found");
    };
    let ctype = match Path::new(key)
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
    {
        "mp4" => "video/mp4",
        "jpg" | "jpeg" => "image/jpeg",
        "png" => "image/png",
        "srt" => "application/x-subrip",
        "vtt" => "text/vtt; charset=utf-8",
        _ => "application/octet-stream",
    };
    match poem::web::StaticFileRequest::from_request_without_body(req).await {
        Ok(sf) => match sf.create_response(&path, true, false) {
            Ok(r) => r.into_response().with_content_type(ctype).into_response(),
            Err(_) => error_response(StatusCode::NOT_FOUND, "not_found", "media not found"),
        },
        Err(_) => error_response(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "bad range or conditional headers",
        ),
    }
}
