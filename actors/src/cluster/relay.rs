//! Requests routed over the cluster. Any node's HTTP API serves any request:
//! when the account belongs to another node, the receiving node sends the
//! request to that node's [`HttpRelay`] (process group
//! `clipforge.http.<node>`), which runs it through its own HTTP stack and
//! sends the response back to the receiving node's [`ReplyRouter`] (group
//! `clipforge.http.replies.<node>`, one per node, joined once at start):
//! a response whose body is complete when its head is ready (every JSON
//! answer) travels as one message; a longer one as head, body chunks and
//! end. The router hands each to the request waiting for it (by request
//! id, in [`Replies`]). Streaming makes Server-Sent Events work across
//! nodes: a subscriber on one node follows a project owned by another.
//!
//! The HTTP side (poem) lives in the binary; this module only moves bytes.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ractor::{Actor, ActorProcessingErr, ActorRef};
use ractor_cluster::RactorClusterMessage;
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, oneshot};

use super::replies::Pending;
pub use super::replies::{Replies, ReplyBody, WireHead};
use super::wire::Wire;
use super::Cluster;
use crate::tasks::AbortOnDrop;

/// The largest request body sent to another node (the HTTP side answers
/// 413 beyond this). Uploads never travel: the node receiving one streams
/// it to object storage.
pub const MAX_FORWARD_BODY: usize = 8 * 1024 * 1024;
/// Request and response bodies travel in chunks of at most this many
/// bytes, each its own cluster frame: ractor_cluster closes a session (the
/// link between two nodes, for every request on it) on a frame over
/// 16 MiB, and a small frame does not hold the link for long.
pub const MAX_CHUNK: usize = 1024 * 1024;
/// A forwarded request whose body stops arriving (its node died midway)
/// is dropped after this long.
const BODY_TIMEOUT: Duration = Duration::from_secs(60);
/// A forwarded request whose response head has not come after this long
/// is given up (its body may then stream for as long as it lives).
const HEAD_TIMEOUT: Duration = Duration::from_secs(600);

fn relay_group(node: &str) -> String {
    format!("clipforge.http.{node}")
}

fn replies_group(node: &str) -> String {
    format!("clipforge.http.replies.{node}")
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WireRequest {
    /// The request's id at the node it came in on.
    pub id: String,
    pub method: String,
    /// Path and query.
    pub uri: String,
    pub headers: Vec<(String, String)>,
    /// The node the request came in on.
    pub from: String,
}

#[derive(RactorClusterMessage)]
pub enum RelayMsg {
    /// A request and the first chunk of its body; the last flag says
    /// whether the body is complete.
    Request(Wire<WireRequest>, Vec<u8>, bool),
    /// More of request `id`'s body; the flag marks its last chunk.
    Body(String, Vec<u8>, bool),
    /// The client went away: stop streaming `id`.
    Cancel(String),
}

#[derive(RactorClusterMessage)]
pub enum ReplyMsg {
    /// Request `id`'s response head with the first part of its body; the
    /// flag says the body is complete (no `Chunk` or `End` follows).
    Head(String, Wire<WireHead>, Vec<u8>, bool),
    /// More of request `id`'s body.
    Chunk(String, Vec<u8>),
    /// End of request `id`'s body; a non-empty text is an error.
    End(String, String),
    /// Gives up on requests whose owner is gone or whose client left.
    Tick,
}

/// A response: its head, the body's first part, and the rest of the body
/// when it was not complete as the head was ready (a stream).
pub type Response = (WireHead, Vec<u8>, Option<BodyRest>);

/// The rest of a streamed body: its chunks, and the task reading them
/// from the handler's body, which ends with this (when the request's task
/// in the relay stops, or the forwarding node stops listening).
pub struct BodyRest {
    chunks: mpsc::Receiver<Vec<u8>>,
    _reader: AbortOnDrop<()>,
}

impl BodyRest {
    pub fn new(chunks: mpsc::Receiver<Vec<u8>>, reader: tokio::task::JoinHandle<()>) -> Self {
        let _reader = AbortOnDrop(reader);
        Self { chunks, _reader }
    }

    async fn recv(&mut self) -> Option<Vec<u8>> {
        self.chunks.recv().await
    }
}

/// Runs a request on this node.
pub type Handler = Arc<
    dyn Fn(WireRequest, Vec<u8>) -> Pin<Box<dyn Future<Output = Response> + Send>> + Send + Sync,
>;

// ------------------------------------------------------------- serving side

#[derive(Clone)]
pub struct HttpRelay;

pub struct HttpRelayState {
    handler: Handler,
    streams: Arc<Mutex<HashMap<String, tokio::task::JoinHandle<()>>>>,
    /// Requests whose body is still arriving, with when they began.
    partial: HashMap<String, (WireRequest, Vec<u8>, Instant)>,
}

/// A relay that stops (or fails) stops the responses it was streaming:
/// their callers give them up too, seeing a new relay in its group.
impl Drop for HttpRelayState {
    fn drop(&mut self) {
        let mut streams = self.streams.lock().unwrap_or_else(|e| e.into_inner());
        for (_, task) in streams.drain() {
            task.abort();
        }
    }
}

/// Stream keys are the requesting node and its request id.
fn stream_key(from: &str, id: &str) -> String {
    format!("{from}/{id}")
}

impl HttpRelayState {
    /// Runs a complete request and sends its response to the caller's
    /// router.
    fn serve(&mut self, req: WireRequest, body: Vec<u8>) {
        let key = stream_key(&req.from, &req.id);
        let handler = self.handler.clone();
        let streams = self.streams.clone();
        let task_key = key.clone();
        let task = tokio::spawn(async move {
            let (id, from) = (req.id.clone(), req.from.clone());
            // A panic in the request is answered 500 at once, not left for
            // the forwarding node to give up on after `HEAD_TIMEOUT`.
            let run = async move {
                crate::faults::check(crate::faults::Point::Forwarded);
                handler(req, body).await
            };
            let (head, first, rest) = match crate::tasks::catch_panic(run).await {
                Ok(response) => response,
                Err(panic) => {
                    let error = crate::tasks::panic_text(&*panic);
                    tracing::error!(%from, %error, "cluster: a forwarded request failed");
                    internal_error()
                }
            };
            if let Some(router) = find_router(&from).await {
                send_response(&router, id, head, first, rest).await;
            } else {
                tracing::warn!(%from, "cluster: no reply router for a forwarded request");
            }
            streams
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&task_key);
        });
        let mut streams = self.streams.lock().unwrap_or_else(|e| e.into_inner());
        if !task.is_finished() {
            streams.insert(key, task);
        }
    }

    /// Forgets bodies whose sender stopped sending.
    fn drop_stale(&mut self) {
        self.partial.retain(|id, (_, _, began)| {
            let keep = began.elapsed() < BODY_TIMEOUT;
            if !keep {
                tracing::warn!(%id, "cluster: a forwarded request body stopped arriving");
            }
            keep
        });
    }
}

/// The uniform error body of a request that failed on this node.
fn internal_error() -> Response {
    let body = serde_json::json!({
        "error": "internal_error",
        "message": "something went wrong on our side; please try again",
    });
    (
        WireHead {
            status: 500,
            headers: vec![("content-type".into(), "application/json".into())],
        },
        body.to_string().into_bytes(),
        None,
    )
}

/// The head with the body's first chunk (one message when that is all),
/// then the rest in chunks of at most [`MAX_CHUNK`], then the end.
async fn send_response(
    router: &ActorRef<ReplyMsg>,
    id: String,
    head: WireHead,
    first: Vec<u8>,
    rest: Option<BodyRest>,
) {
    let mut pieces = first.chunks(MAX_CHUNK);
    let opening = pieces.next().unwrap_or(&[]).to_vec();
    let more = first.len() > MAX_CHUNK;
    let complete = rest.is_none() && !more;
    if router
        .cast(ReplyMsg::Head(
            id.clone(),
            Wire(Some(head)),
            opening,
            complete,
        ))
        .is_err()
        || complete
    {
        return;
    }
    for piece in pieces {
        if router
            .cast(ReplyMsg::Chunk(id.clone(), piece.to_vec()))
            .is_err()
        {
            return;
        }
    }
    if let Some(mut rest) = rest {
        while let Some(c) = rest.recv().await {
            for piece in c.chunks(MAX_CHUNK) {
                if router
                    .cast(ReplyMsg::Chunk(id.clone(), piece.to_vec()))
                    .is_err()
                {
                    return;
                }
            }
        }
    }
    let _ = router.cast(ReplyMsg::End(id, String::new()));
}

impl Actor for HttpRelay {
    type Msg = RelayMsg;
    type State = HttpRelayState;
    type Arguments = (String, Handler);

    async fn pre_start(
        &self,
        myself: ActorRef<RelayMsg>,
        (node, handler): Self::Arguments,
    ) -> Result<HttpRelayState, ActorProcessingErr> {
        ractor::pg::join(relay_group(&node), vec![myself.get_cell()]);
        Ok(HttpRelayState {
            handler,
            streams: Arc::default(),
            partial: HashMap::new(),
        })
    }

    async fn handle(
        &self,
        _myself: ActorRef<RelayMsg>,
        msg: RelayMsg,
        st: &mut HttpRelayState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            RelayMsg::Request(Wire(Some(req)), body, complete) => {
                crate::faults::check(crate::faults::Point::Relay);
                st.drop_stale();
                if complete {
                    st.serve(req, body);
                } else {
                    let key = stream_key(&req.from, &req.id);
                    st.partial.insert(key, (req, body, Instant::now()));
                }
            }
            RelayMsg::Request(Wire(None), _, _) => {}
            RelayMsg::Body(key, chunk, last) => {
                let Some(entry) = st.partial.get_mut(&key) else {
                    return Ok(());
                };
                if entry.1.len() + chunk.len() > MAX_FORWARD_BODY {
                    // The sender checks the size first; a peer that does
                    // not gets nothing served.
                    st.partial.remove(&key);
                    return Ok(());
                }
                entry.1.extend_from_slice(&chunk);
                if last {
                    if let Some((req, body, _)) = st.partial.remove(&key) {
                        st.serve(req, body);
                    }
                }
            }
            RelayMsg::Cancel(key) => {
                st.partial.remove(&key);
                let task = st
                    .streams
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&key);
                if let Some(t) = task {
                    t.abort();
                }
            }
        }
        Ok(())
    }
}

/// The requesting node's router; a node that has just joined may not be
/// visible in the group yet.
async fn find_router(node: &str) -> Option<ActorRef<ReplyMsg>> {
    for _ in 0..40 {
        if let Some(m) = ractor::pg::get_members(&replies_group(node))
            .into_iter()
            .next()
        {
            return Some(m.into());
        }
        tokio::time::sleep(Duration::from_millis(125)).await;
    }
    None
}

// ------------------------------------------------------------- calling side

/// Asks `owner`'s relay to stop streaming request `id` of this node.
fn cancel_at(owner: &str, node: &str, id: &str) {
    for m in ractor::pg::get_members(&relay_group(owner)) {
        let relay: ActorRef<RelayMsg> = m.into();
        let _ = relay.cast(RelayMsg::Cancel(stream_key(node, id)));
    }
}

/// One per node: delivers the responses to the requests this node
/// forwarded.
#[derive(Clone)]
pub struct ReplyRouter;

pub struct RouterState {
    cluster: Arc<Cluster>,
    replies: Arc<Replies>,
}

impl RouterState {
    /// Stops request `id`: its client is gone.
    fn abandon(&self, id: &str) {
        if let Some(p) = self.replies.map().remove(id) {
            cancel_at(&p.owner, self.cluster.node_name(), id);
        }
    }

    fn deliver(&self, id: String, chunk: Vec<u8>) {
        let gone = match self.replies.map().get(&id) {
            Some(p) => p.body.as_ref().is_none_or(|b| b.send(chunk).is_err()),
            None => false,
        };
        if gone {
            self.abandon(&id);
        }
    }

    /// Drops requests whose owner is lost or has not answered in time, and
    /// stops at the owner those whose client went away.
    fn sweep(&self) {
        let mut left = Vec::new();
        self.replies.map().retain(|id, p| {
            let lost = !self.cluster.is_up(&p.owner)
                || !ractor::pg::get_members(&relay_group(&p.owner))
                    .iter()
                    .any(|m| m.get_id() == p.relay);
            let no_head = p.head.is_some() && p.started.elapsed() > HEAD_TIMEOUT;
            let client_gone = p.body.as_ref().is_some_and(|b| b.is_closed())
                || p.head.as_ref().is_some_and(|h| h.is_closed());
            if lost {
                tracing::warn!(%id, owner = %p.owner, "cluster: owner node or relay lost mid-response");
            } else if client_gone {
                left.push((p.owner.clone(), id.clone()));
            }
            !(lost || no_head || client_gone)
        });
        for (owner, id) in left {
            cancel_at(&owner, self.cluster.node_name(), &id);
        }
    }
}

impl Actor for ReplyRouter {
    type Msg = ReplyMsg;
    type State = RouterState;
    type Arguments = (Arc<Cluster>, Arc<Replies>);

    async fn pre_start(
        &self,
        myself: ActorRef<ReplyMsg>,
        (cluster, replies): Self::Arguments,
    ) -> Result<RouterState, ActorProcessingErr> {
        ractor::pg::join(replies_group(cluster.node_name()), vec![myself.get_cell()]);
        myself.send_interval(cluster.heartbeat_every(), || ReplyMsg::Tick);
        Ok(RouterState { cluster, replies })
    }

    async fn handle(
        &self,
        _myself: ActorRef<ReplyMsg>,
        msg: ReplyMsg,
        st: &mut RouterState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            ReplyMsg::Head(id, Wire(head), first, complete) => {
                let mut map = st.replies.map();
                let Some(p) = map.get_mut(&id) else {
                    return Ok(());
                };
                let gone = match (p.head.take(), head) {
                    (Some(tx), Some(h)) => {
                        let body = if complete {
                            ReplyBody::Complete(first)
                        } else {
                            let (chunks, rx) = mpsc::unbounded_channel();
                            if !first.is_empty() {
                                let _ = chunks.send(first);
                            }
                            p.body = Some(chunks);
                            ReplyBody::Stream(rx)
                        };
                        tx.send((h, body)).is_err()
                    }
                    // Undecodable head: the request fails as unanswered.
                    _ => true,
                };
                if complete || gone {
                    let owner = p.owner.clone();
                    map.remove(&id);
                    drop(map);
                    if gone && !complete {
                        cancel_at(&owner, st.cluster.node_name(), &id);
                    }
                }
            }
            ReplyMsg::Chunk(id, c) => st.deliver(id, c),
            ReplyMsg::End(id, err) => {
                if !err.is_empty() {
                    tracing::warn!(%id, error = %err, "cluster: forwarded response failed");
                }
                st.replies.map().remove(&id);
            }
            ReplyMsg::Tick => st.sweep(),
        }
        Ok(())
    }
}

/// Why a request could not be forwarded to the node owning its account
/// (the HTTP side answers 503).
#[derive(Debug, thiserror::Error)]
pub enum ForwardError {
    /// The owner has no relay in the cluster's groups, or is marked down.
    #[error("node {node} is not reachable")]
    Unreachable { node: String },
    #[error("node {node} is down")]
    Down { node: String },
    /// The body is over [`MAX_FORWARD_BODY`].
    #[error("a request body of {bytes} bytes is too large to forward")]
    TooLarge { bytes: usize },
    /// The owner's relay did not take the request.
    #[error(transparent)]
    Send(#[from] ractor::MessagingErr<()>),
    /// The owner dropped the request without a response head.
    #[error("node {node} did not answer")]
    NoAnswer { node: String },
}

impl Cluster {
    /// Starts this node's relay, serving forwarded requests with `handler`,
    /// and its reply router.
    pub async fn start_relay(self: &Arc<Self>, handler: Handler) -> anyhow::Result<()> {
        use crate::supervisor::spawner;
        let relay = "cluster.http_relay";
        let args = (self.settings.node_name.clone(), handler);
        self.supervise(relay, spawner(relay, HttpRelay, args))
            .await?;
        let router = "cluster.http_replies";
        let args = (self.clone(), self.replies.clone());
        self.supervise(router, spawner(router, ReplyRouter, args))
            .await
    }

    /// Sends a request to `owner` and waits for the response head; the
    /// body follows on the receiver. `Err` when the owner is unreachable.
    pub async fn forward(
        self: &Arc<Self>,
        owner: &str,
        mut req: WireRequest,
        body: Vec<u8>,
    ) -> Result<(WireHead, ReplyBody), ForwardError> {
        let node = || owner.to_string();
        let relay: ActorRef<RelayMsg> = ractor::pg::get_members(&relay_group(owner))
            .into_iter()
            .next()
            .ok_or_else(|| ForwardError::Unreachable { node: node() })?
            .into();
        if !self.is_up(owner) {
            return Err(ForwardError::Down { node: node() });
        }
        if body.len() > MAX_FORWARD_BODY {
            return Err(ForwardError::TooLarge { bytes: body.len() });
        }
        let id = self.replies.next_id();
        req.id = id.clone();
        req.from = self.settings.node_name.clone();
        let (head_tx, head_rx) = oneshot::channel();
        self.replies.map().insert(
            id.clone(),
            Pending {
                owner: owner.to_string(),
                relay: relay.get_id(),
                head: Some(head_tx),
                body: None,
                started: Instant::now(),
            },
        );
        if let Err(e) = send_request(&relay, req, &body) {
            self.replies.map().remove(&id);
            return Err(e);
        }
        match head_rx.await {
            Ok(answer) => Ok(answer),
            Err(_) => Err(ForwardError::NoAnswer { node: node() }),
        }
    }
}

/// Casts a request to `relay`: the head with the first chunk of the body,
/// then the rest chunk by chunk (in order: one session carries them).
fn send_request(
    relay: &ActorRef<RelayMsg>,
    req: WireRequest,
    body: &[u8],
) -> Result<(), ForwardError> {
    let key = stream_key(&req.from, &req.id);
    let mut pieces = body.chunks(MAX_CHUNK).peekable();
    let first = pieces.next().unwrap_or(&[]).to_vec();
    let complete = pieces.peek().is_none();
    relay
        .cast(RelayMsg::Request(Wire(Some(req)), first, complete))
        .map_err(|e| e.map(drop))?;
    while let Some(piece) = pieces.next() {
        let last = pieces.peek().is_none();
        relay
            .cast(RelayMsg::Body(key.clone(), piece.to_vec(), last))
            .map_err(|e| e.map(drop))?;
    }
    Ok(())
}

#[cfg(test)]
#[path = "relay_tests.rs"]
mod tests;
