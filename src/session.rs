//! The session a raw request carries: the bearer token, else the session
//! cookie. Used before routing (cluster routing, limits, uploads) as well as
//! by the API's security schemes.

use clipforge_actors::engine::Engine;
use poem::Request;

/// Name of the session cookie.
pub const SESSION_COOKIE: &str = "clipforge.session_token";

/// The session token of a raw request: the bearer token, else the
/// session cookie. Read from the headers, not with poem's `CookieJar`
/// extractor: this runs before routing (cluster routing, limits, uploads),
/// outside the `CookieJarManager` that the API installs, where the
/// extractor panics.
pub fn request_token(req: &Request) -> Option<String> {
    req.header("authorization")
        .and_then(|h| h.strip_prefix("Bearer "))
        .map(str::to_string)
        .or_else(|| session_cookie(req.headers()))
}

/// Whether the `Cookie` headers carry the session cookie.
pub fn has_session_cookie(headers: &poem::http::HeaderMap) -> bool {
    session_cookie(headers).is_some()
}

/// The first `clipforge.session_token` cookie of the `Cookie` headers,
/// parsed as poem's cookie jar parses them.
fn session_cookie(headers: &poem::http::HeaderMap) -> Option<String> {
    headers
        .get_all(poem::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';').map(str::trim))
        .filter_map(|c| poem::web::cookie::Cookie::parse(c).ok())
        .find(|c| c.name() == SESSION_COOKIE)
        .map(|c| c.value_str().to_string())
}

/// The account id and session token a request comes with (bearer or
/// cookie), when the session is valid.
pub async fn session_of(engine: &Engine, req: &Request) -> Option<(String, String)> {
    let token = request_token(req)?;
    let (account, _) = engine.desk().session(&token).await.ok()??;
    Some((account.id, token))
}
