//! `/mcp`: the MCP server over streamable HTTP, stateless (every POST is
//! answered on its own, as JSON; no session is kept, so a flood of
//! clients holds no memory), for API keys only. The request has passed
//! the middleware like any other (limits, cluster routing to the key's
//! account's node); the tools then call this node's routes with the same
//! key and client address ([`super::Backend::Local`]).

use std::sync::OnceLock;

use http_body_util::BodyExt;
use poem::http::StatusCode;
use poem::{Body, Request, Response};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tower_service::Service;

use super::{Backend, Clipforge};
use crate::api::scopes::KeyCaller;
use crate::error_body::error_response;

type Mcp = StreamableHttpService<Clipforge, NeverSessionManager>;

fn service() -> Mcp {
    static SERVICE: OnceLock<Mcp> = OnceLock::new();
    SERVICE
        .get_or_init(|| {
            let config = StreamableHttpServerConfig::default()
                .with_legacy_session_mode(false)
                .with_json_response(true)
                .with_sse_keep_alive(None)
                // Requests carry an API key; the node's own CORS and
                // origin rules apply before this.
                .disable_allowed_hosts();
            StreamableHttpService::new(
                || Ok(Clipforge::new(Backend::Local)),
                Default::default(),
                config,
            )
        })
        .clone()
}

/// The endpoint (`poem::endpoint::make`: it takes the whole request).
pub async fn mcp(req: Request) -> Response {
    // The key gate (`api::scopes::gate`) checked the key, its scope and
    // its rate, and left this; a session or no credential did not.
    if req.data::<KeyCaller>().is_none() {
        return error_response(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "the MCP endpoint takes an API key: Authorization: Bearer cf_… (create one on the Developers page)",
        );
    }
    let http_req: poem::http::Request<_> = req.into();
    let answer = match service().call(http_req).await {
        Ok(a) => a,
        Err(never) => match never {},
    };
    let (parts, body) = answer.into_parts();
    let body = body.map_err(|never| match never {}).boxed();
    let mut resp = Response::builder()
        .status(parts.status)
        .body(Body::from(body));
    *resp.headers_mut() = parts.headers;
    resp
}
