//! Wiring of the cluster membership (`[cluster]`) and `GET /admin/cluster`.

use std::sync::Arc;

use clipforge_actors::cluster::{Cluster, ClusterSnapshot, Role};
use clipforge_actors::engine::Engine;
use clipforge_actors::housekeeping::Periodic;
use clipforge_actors::posts::Publishing;
use poem::web::Data;
use poem::{handler, Request, Response};

use crate::config::Config;
use crate::state::State;

/// Joins the cluster when `[cluster]` is on; `None` for a single node.
pub async fn start(config: &Config, engine: &Arc<Engine>) -> anyhow::Result<Option<Arc<Cluster>>> {
    let Some(settings) = config
        .cluster
        .settings(&config.node.name)
        .map_err(|e| anyhow::anyhow!(e))?
    else {
        return Ok(None);
    };
    let listen = settings.listen;
    let s = engine.clone();
    let cluster =
        Cluster::start(settings, Arc::new(move || s.load()), engine.tree().clone()).await?;
    tracing::info!(%listen, "cluster node server listening");
    let cluster = Arc::new(cluster);
    if cluster.has_role(Role::Worker) {
        clipforge_actors::cluster::worker::start_worker(engine.worker_host(cluster.clone()))
            .await?;
    }
    engine.join_cluster(cluster.clone());
    Ok(Some(cluster))
}

/// Hand-off (single activation), as the housekeeping branch's `hand-off`
/// actor (every heartbeat): once the node has heard from its peers (one
/// heartbeat timeout after joining), whenever the set of up nodes changes,
/// and every four leases, stop the actors this node no longer owns and take
/// over the unfinished projects and pending posts it now owns. A hand-off
/// that fails (the store unreachable) is tried again on the next tick; one
/// that panics fails the actor, which its supervisor starts again. A node
/// that is leaving hands off once more itself ([`leave`]).
pub fn hand_off_job(
    cluster: Arc<Cluster>,
    engine: Arc<Engine>,
    publishing: Arc<Publishing>,
) -> Periodic {
    let joined = std::time::Instant::now();
    // The membership generation of the last complete hand-off, and when.
    let done: Arc<std::sync::Mutex<Option<(u64, std::time::Instant)>>> = Arc::default();
    let every = cluster.heartbeat_every();
    Periodic::new_async(HAND_OFF, every, move || {
        let (cluster, engine, publishing, done) = (
            cluster.clone(),
            engine.clone(),
            publishing.clone(),
            done.clone(),
        );
        async move {
            if joined.elapsed() < cluster.heartbeat_timeout() || cluster.is_leaving() {
                return;
            }
            // Also every few leases with no membership change: picks up a
            // project whose actor stopped on a lost lease, and posts created
            // on a node that is not their scheduler.
            let sweep = cluster.lease_ttl() * 4;
            let generation = cluster.generation();
            let last = *done.lock().unwrap_or_else(|e| e.into_inner());
            let due = last.is_none_or(|(g, at)| g != generation || at.elapsed() >= sweep);
            if due && hand_off(&engine, &publishing).await {
                *done.lock().unwrap_or_else(|e| e.into_inner()) =
                    Some((generation, std::time::Instant::now()));
            }
        }
    })
}

/// The hand-off's name in the tree (and in `housekeeping-panic:`).
pub const HAND_OFF: &str = "hand-off";

/// One hand-off; false when it did not complete.
pub async fn hand_off(engine: &Arc<Engine>, publishing: &Arc<Publishing>) -> bool {
    let projects = engine.hand_off().await;
    let posts = publishing.hand_off().await;
    match (projects, posts) {
        (Ok(p), Ok((posts_stopped, posts_armed))) => {
            if p != Default::default() || posts_stopped + posts_armed > 0 {
                tracing::info!(
                    accounts_stopped = p.accounts_stopped,
                    projects_stopped = p.projects_stopped,
                    projects_started = p.projects_started,
                    posts_stopped,
                    posts_armed,
                    "cluster hand-off"
                );
            }
            true
        }
        (p, q) => {
            let e = p.err().map(|e| e.to_string()).unwrap_or_default();
            let f = q.err().map(|e| e.to_string()).unwrap_or_default();
            tracing::warn!(projects = %e, posts = %f, "cluster hand-off incomplete; will retry");
            false
        }
    }
}

/// A graceful stop: this node owns nothing from now on, hands every actor
/// off (the owners that follow take them over from the store) and leaves
/// the cluster, so its peers see it down at once.
pub async fn leave(cluster: &Arc<Cluster>, engine: &Arc<Engine>, publishing: &Arc<Publishing>) {
    cluster.leave();
    hand_off(engine, publishing).await;
    cluster.stop();
}

/// Nodes, roles, state, load and last heartbeat age, as this node sees them.
#[handler]
pub fn admin_cluster(state: Data<&State>, req: &Request) -> Response {
    if !crate::admin::admin_ok(&state, req) {
        return crate::admin::admin_refused();
    }
    let snapshot = match &state.cluster {
        Some(c) => c.snapshot(),
        None => ClusterSnapshot::single(
            &state.config.node.name,
            &state.config.cluster.roles,
            state.engine.load(),
        ),
    };
    Response::builder()
        .content_type("application/json")
        .body(serde_json::to_string(&snapshot).unwrap_or_default())
}

// ------------------------------------------------------------------ routing

use std::sync::OnceLock;

use clipforge_actors::cluster::relay::{
    BodyRest, Handler, ReplyBody, WireHead, WireRequest, MAX_CHUNK, MAX_FORWARD_BODY,
};
use poem::{Body, Endpoint, EndpointExt};

use crate::session::request_token;

use crate::security::FORWARDED;

pub type SharedEndpoint = Arc<poem::endpoint::BoxEndpoint<'static, Response>>;

static ENDPOINT: OnceLock<SharedEndpoint> = OnceLock::new();

/// This node's routes (after the entry checks), for requests made in
/// process: the relay's, and the MCP tools' (`crate::mcp`).
pub fn local_endpoint() -> Option<SharedEndpoint> {
    ENDPOINT.get().cloned()
}

/// The node's whole HTTP stack, shared by the server and the relay. The
/// server's requests enter here: the internal headers are removed from
/// them and the client address is resolved (`security::Guard::on_entry`);
/// the relay calls the stack directly.
pub struct Shared(pub SharedEndpoint, Arc<crate::security::Guard>);

impl Endpoint for Shared {
    type Output = Response;
    async fn call(&self, mut req: Request) -> poem::Result<Response> {
        self.1.on_entry(&mut req);
        self.0.call(req).await
    }
}

/// The node's endpoint around `routes` (the app's routes, given by `serve`),
/// and when clustered the relay that serves requests forwarded by other
/// nodes through it.
pub async fn endpoint(state: &State, routes: impl Endpoint + 'static) -> anyhow::Result<Shared> {
    let cluster = state.cluster.clone();
    let guard = state.guard.clone();
    let ep: SharedEndpoint = Arc::new(routes.map_to_response().boxed());
    let _ = ENDPOINT.set(ep.clone());
    if let Some(c) = cluster {
        c.start_relay(relay_handler()).await?;
    }
    Ok(Shared(ep, guard))
}

fn relay_handler() -> Handler {
    Arc::new(|req: WireRequest, body: Vec<u8>| {
        Box::pin(async move {
            let Some(ep) = ENDPOINT.get().cloned() else {
                let head = WireHead {
                    status: 503,
                    headers: Vec::new(),
                };
                return (head, Vec::new(), None);
            };
            let mut b = Request::builder()
                .method(req.method.parse().unwrap_or(poem::http::Method::GET))
                .uri_str(&req.uri);
            for (k, v) in &req.headers {
                b = b.header(k.as_str(), v.as_str());
            }
            let r = b
                .header(FORWARDED, req.from.as_str())
                .body(Body::from(body));
            let resp = match ep.call(r).await {
                Ok(r) => r,
                Err(e) => e.into_response(),
            };
            let (parts, body) = resp.into_parts();
            let head = WireHead {
                status: parts.status.as_u16(),
                headers: parts
                    .headers
                    .iter()
                    .filter_map(|(k, v)| Some((k.to_string(), v.to_str().ok()?.to_string())))
                    .collect(),
            };
            // What of the body is ready now goes with the head: all of it
            // for a JSON answer (one message back), the start of a stream.
            use futures_util::{FutureExt, StreamExt};
            let mut s = body.into_bytes_stream();
            let mut first = Vec::new();
            while first.len() < MAX_CHUNK {
                match s.next().now_or_never() {
                    Some(Some(Ok(chunk))) => first.extend_from_slice(&chunk),
                    Some(Some(Err(_))) | Some(None) => return (head, first, None),
                    None => break,
                }
            }
            let (tx, rx) = tokio::sync::mpsc::channel(64);
            let reader = tokio::spawn(async move {
                while let Some(Ok(chunk)) = s.next().await {
                    if tx.send(chunk.to_vec()).await.is_err() {
                        break;
                    }
                }
            });
            (head, first, Some(BodyRest::new(rx, reader)))
        })
    })
}

const HOP_BY_HOP: [&str; 6] = [
    "connection",
    "keep-alive",
    "transfer-encoding",
    "content-length",
    "upgrade",
    "host",
];

const WEBHOOK: &str = "/api/stripe/webhook";
const UPLOAD: &str = "/api/upload";

/// The account a Stripe delivery concerns (the body is read and put back);
/// `None` when billing is off or the event names no account.
async fn webhook_account(state: &State, req: &mut Request) -> Option<String> {
    let billing = state.billing.as_ref()?;
    let bytes = req.take_body().into_bytes().await.ok()?;
    req.set_body(bytes.clone());
    billing
        .account_of_delivery(state.engine.desk(), &bytes)
        .await
}

/// The account a request acts for, when it names one: the session token
/// (`<account id>.<secret>`), or the email of a sign-up or sign-in (the id
/// is derived from it). The body is read for the latter and put back.
async fn account_of(req: &mut Request) -> Option<String> {
    let path = req.uri().path();
    // OAuth callbacks come with the session that started the flow when the
    // browser sends its cookie, and go to its account's node; without it
    // they are served where they arrive (the flow's `state` is in the
    // shared records).
    if !path.starts_with("/api/") || path == WEBHOOK {
        return None;
    }
    if req.method() == poem::http::Method::POST
        && (path == "/api/auth/sign-up/email" || path == "/api/auth/sign-in/email")
    {
        let bytes = req.take_body().into_bytes().await.ok()?;
        let email = serde_json::from_slice::<serde_json::Value>(&bytes)
            .ok()
            .and_then(|v| v["email"].as_str().map(str::to_string));
        req.set_body(bytes);
        let email = clipforge_actors::accounts::normalize_email(&email?).ok()?;
        return Some(clipforge_actors::accounts::account_id_for_email(&email));
    }
    let token = request_token(req)?;
    clipforge_actors::accounts::account_of_token(token.trim()).map(str::to_string)
}

/// Serves the request on the node that owns its account (rendezvous
/// hashing over the up `api` nodes) when that is another node; `None` to
/// serve it here.
pub async fn route(state: &State, req: &mut Request) -> Option<Response> {
    let cluster = state.cluster.as_ref()?;
    if req.header(FORWARDED).is_some() {
        return None;
    }
    let path = req.uri().path().to_string();
    let (owner, up) = if path == "/admin/actors" || path.starts_with("/admin/actors/") {
        let node = req
            .uri()
            .query()
            .and_then(|q| q.split('&').find_map(|kv| kv.strip_prefix("node=")))
            .map(str::to_string);
        match node {
            Some(n) if n != cluster.node_name() => {
                let up = cluster.is_up(&n);
                (n, up)
            }
            Some(_) => return None,
            None if path == "/admin/actors" => return Some(admin_fanout(cluster, req).await),
            None => return None,
        }
    } else if req.method() == poem::http::Method::POST && path.trim_end_matches('/') == UPLOAD {
        // An upload is streamed to object storage by the node receiving
        // it (the same code, quota and limits as a single node); only its
        // record goes to the account's owner (`api::media::commit_upload`).
        return None;
    } else {
        // A Stripe delivery goes to the node hosting its account, which
        // checks its signature and applies it; any node can receive it.
        let account = if path == WEBHOOK && req.method() == poem::http::Method::POST {
            webhook_account(state, req).await?
        } else {
            account_of(req).await?
        };
        match cluster.owner_of(&account, Role::Api) {
            Some(owner) if owner == cluster.node_name() => return None,
            Some(owner) => (owner, true),
            None => ("an api node".to_string(), false),
        }
    };
    let unavailable = |why: String| {
        tracing::warn!(%owner, error = %why, "cannot route a request");
        crate::error_body::error_response(
            poem::http::StatusCode::SERVICE_UNAVAILABLE,
            "node_unavailable",
            "no node can serve this account right now; try again shortly",
        )
    };
    if !up {
        return Some(unavailable(format!("{owner} is down")));
    }
    let wire = wire_request(req);
    // The whole body travels in one cluster frame: bounded well under the
    // frame limit that would close the link between the two nodes.
    let cap = MAX_FORWARD_BODY as u64;
    if crate::bodylimit::declared_over(req, cap) {
        return Some(crate::bodylimit::too_large(cap));
    }
    let over = crate::bodylimit::limit(req, cap);
    let body = match req.take_body().into_vec().await {
        Ok(b) if b.len() <= MAX_FORWARD_BODY => b,
        Ok(_) => return Some(crate::bodylimit::too_large(cap)),
        Err(_) if over.is_set() => return Some(crate::bodylimit::too_large(cap)),
        Err(e) => {
            return Some(crate::error_body::error_response(
                poem::http::StatusCode::BAD_REQUEST,
                "bad_request",
                &format!("cannot read the request body: {e}"),
            ))
        }
    };
    let (head, body) = match cluster.forward(&owner, wire, body).await {
        Ok(r) => r,
        Err(e) => return Some(unavailable(e.to_string())),
    };
    let mut resp = Response::builder().status(
        poem::http::StatusCode::from_u16(head.status)
            .unwrap_or(poem::http::StatusCode::BAD_GATEWAY),
    );
    let complete = matches!(body, ReplyBody::Complete(_));
    for (k, v) in &head.headers {
        // A complete body's length is its own (the server sets it).
        let length = complete && k == "content-length";
        if !HOP_BY_HOP.contains(&k.as_str()) && !length {
            resp = resp.header(k.as_str(), v.as_str());
        }
    }
    let mut resp = match body {
        ReplyBody::Complete(bytes) => resp.body(bytes),
        ReplyBody::Stream(rx) => {
            let stream = futures_util::stream::unfold(rx, |mut rx| async move {
                rx.recv()
                    .await
                    .map(|c| (Ok::<_, std::io::Error>(bytes::Bytes::from(c)), rx))
            });
            resp.body(Body::from_bytes_stream(stream))
        }
    };
    resp.headers_mut().insert(
        "x-clipforge-node",
        owner
            .parse()
            .unwrap_or(poem::http::HeaderValue::from_static("?")),
    );
    Some(resp)
}

/// `POST /internal/uploads/commit` (`api::media::COMMIT_PATH`): another
/// node stored an upload for an account this node hosts and sends its
/// record here. Only the relay sets `x-clipforge-forwarded` (a client's
/// copy is removed on entry), so a client gets 404.
#[handler]
pub async fn commit_upload(
    state: Data<&State>,
    req: &Request,
    body: poem::web::Json<crate::api::media::UploadCommit>,
) -> Response {
    use poem::IntoResponse;
    if req.header(FORWARDED).is_none() {
        return crate::error_body::error_response(
            poem::http::StatusCode::NOT_FOUND,
            "not_found",
            "not found",
        );
    }
    match crate::api::media::record_upload(&state, body.0).await {
        Ok(()) => Response::builder()
            .content_type("application/json")
            .body("{}"),
        Err(e) => e.into_response(),
    }
}

fn wire_request(req: &Request) -> WireRequest {
    WireRequest {
        id: String::new(),
        method: req.method().to_string(),
        uri: req
            .uri()
            .path_and_query()
            .map(|p| p.to_string())
            .unwrap_or_else(|| req.uri().path().to_string()),
        headers: req
            .headers()
            .iter()
            .filter(|(k, _)| !HOP_BY_HOP.contains(&k.as_str()))
            .filter_map(|(k, v)| Some((k.to_string(), v.to_str().ok()?.to_string())))
            .collect(),
        from: String::new(),
    }
}

/// `GET /admin/actors` on a cluster: this node's actor tree and every
/// other node's (fetched over the cluster), as `{"nodes": [...]}`; a node
/// that is down or does not answer is listed with its state.
async fn admin_fanout(cluster: &Arc<Cluster>, req: &mut Request) -> Response {
    let wire = wire_request(req);
    let Some(ep) = ENDPOINT.get().cloned() else {
        return crate::admin::admin_refused();
    };
    let mut local = Request::builder()
        .method(poem::http::Method::GET)
        .uri_str("/admin/actors");
    for (k, v) in &wire.headers {
        local = local.header(k.as_str(), v.as_str());
    }
    let resp = match ep
        .call(local.header(FORWARDED, cluster.node_name()).finish())
        .await
    {
        Ok(r) => r,
        Err(e) => e.into_response(),
    };
    if !resp.status().is_success() {
        return resp;
    }
    let mine: serde_json::Value = resp
        .into_body()
        .into_json()
        .await
        .unwrap_or(serde_json::Value::Null);
    let mut nodes = vec![mine];
    for n in cluster.snapshot().nodes.into_iter().filter(|n| !n.is_self) {
        let entry = match cluster.forward(&n.name, wire.clone(), Vec::new()).await {
            Ok((head, body)) if head.status == 200 => {
                serde_json::from_slice(&body.collect().await).unwrap_or(serde_json::Value::Null)
            }
            Ok((head, _)) => {
                serde_json::json!({ "node": n.name, "state": n.state, "status": head.status })
            }
            Err(e) => {
                serde_json::json!({ "node": n.name, "state": n.state, "error": e.to_string() })
            }
        };
        nodes.push(entry);
    }
    Response::builder()
        .content_type("application/json")
        .body(serde_json::json!({ "nodes": nodes }).to_string())
}
