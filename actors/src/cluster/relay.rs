//! Requests routed over the cluster. Any node's HTTP API serves any request:
//! when the account belongs to another data node, the receiving node sends
//! the request to that node's [`HttpRelay`] (process group
//! `clipforge.http.<node>`), which runs it through its own HTTP stack and
//! streams the response back — head, body chunks, end — to a
//! [`ResponseSink`] in the group `clipforge.http.reply.<id>` on the
//! receiving node. Streaming makes Server-Sent Events work across nodes:
//! a subscriber on one node follows a project owned by another.
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

use super::wire::Wire;
use super::Cluster;

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

fn relay_group(node: &str) -> String {
    format!("clipforge.http.{node}")
}

fn reply_group(id: &str) -> String {
    format!("clipforge.http.reply.{id}")
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WireRequest {
    /// Reply group key.
    pub id: String,
    pub method: String,
    /// Path and query.
    pub uri: String,
    pub headers: Vec<(String, String)>,
    /// The node the request came in on.
    pub from: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WireHead {
    pub status: u16,
    pub headers: Vec<(String, String)>,
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
pub enum SinkMsg {
    Head(Wire<WireHead>),
    Chunk(Vec<u8>),
    /// End of the body; a non-empty text is an error.
    End(String),
    Tick,
}

/// Runs a request on this node: the response head and its body chunks.
pub type Handler = Arc<
    dyn Fn(
            WireRequest,
            Vec<u8>,
        ) -> Pin<Box<dyn Future<Output = (WireHead, mpsc::Receiver<Vec<u8>>)> + Send>>
        + Send
        + Sync,
>;

// ------------------------------------------------------------- serving side

pub struct HttpRelay;

pub struct HttpRelayState {
    handler: Handler,
    streams: Arc<Mutex<HashMap<String, tokio::task::JoinHandle<()>>>>,
    /// Requests whose body is still arriving, with when they began.
    partial: HashMap<String, (WireRequest, Vec<u8>, Instant)>,
}

impl HttpRelayState {
    /// Runs a complete request and streams its response to the caller.
    fn serve(&mut self, req: WireRequest, body: Vec<u8>) {
        let id = req.id.clone();
        let handler = self.handler.clone();
        let streams = self.streams.clone();
        let task_id = id.clone();
        let task = tokio::spawn(async move {
            let (head, mut chunks) = handler(req, body).await;
            let Some(sink) = find_sink(&task_id).await else {
                tracing::warn!(id = %task_id, "cluster: nobody waits for this response");
                streams
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&task_id);
                return;
            };
            let _ = sink.cast(SinkMsg::Head(Wire(Some(head))));
            'stream: while let Some(c) = chunks.recv().await {
                for piece in c.chunks(MAX_CHUNK) {
                    if sink.cast(SinkMsg::Chunk(piece.to_vec())).is_err() {
                        break 'stream;
                    }
                }
            }
            let _ = sink.cast(SinkMsg::End(String::new()));
            streams
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&task_id);
        });
        self.streams
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, task);
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
                st.drop_stale();
                if complete {
                    st.serve(req, body);
                } else {
                    st.partial
                        .insert(req.id.clone(), (req, body, Instant::now()));
                }
            }
            RelayMsg::Request(Wire(None), _, _) => {}
            RelayMsg::Body(id, chunk, last) => {
                let Some(entry) = st.partial.get_mut(&id) else {
                    return Ok(());
                };
                if entry.1.len() + chunk.len() > MAX_FORWARD_BODY {
                    // The sender checks the size first; a peer that does
                    // not gets nothing served.
                    st.partial.remove(&id);
                    return Ok(());
                }
                entry.1.extend_from_slice(&chunk);
                if last {
                    if let Some((req, body, _)) = st.partial.remove(&id) {
                        st.serve(req, body);
                    }
                }
            }
            RelayMsg::Cancel(id) => {
                st.partial.remove(&id);
                let task = st
                    .streams
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&id);
                if let Some(t) = task {
                    t.abort();
                }
            }
        }
        Ok(())
    }
}

/// The reply group can still be propagating when the response is ready.
async fn find_sink(id: &str) -> Option<ActorRef<SinkMsg>> {
    for _ in 0..40 {
        if let Some(m) = ractor::pg::get_members(&reply_group(id)).into_iter().next() {
            return Some(m.into());
        }
        tokio::time::sleep(Duration::from_millis(125)).await;
    }
    None
}

// ------------------------------------------------------------- calling side

pub struct ResponseSink;

pub struct SinkState {
    id: String,
    owner: String,
    cluster: Arc<Cluster>,
    head: Option<oneshot::Sender<WireHead>>,
    body: Option<mpsc::Sender<Vec<u8>>>,
    started: Instant,
}

type SinkArgs = (
    String,
    String,
    Arc<Cluster>,
    oneshot::Sender<WireHead>,
    mpsc::Sender<Vec<u8>>,
);

impl Actor for ResponseSink {
    type Msg = SinkMsg;
    type State = SinkState;
    type Arguments = SinkArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<SinkMsg>,
        (id, owner, cluster, head, body): SinkArgs,
    ) -> Result<SinkState, ActorProcessingErr> {
        ractor::pg::join(reply_group(&id), vec![myself.get_cell()]);
        myself.send_interval(cluster.heartbeat_every(), || SinkMsg::Tick);
        Ok(SinkState {
            id,
            owner,
            cluster,
            head: Some(head),
            body: Some(body),
            started: Instant::now(),
        })
    }

    async fn post_stop(
        &self,
        myself: ActorRef<SinkMsg>,
        st: &mut SinkState,
    ) -> Result<(), ActorProcessingErr> {
        ractor::pg::leave(reply_group(&st.id), vec![myself.get_cell()]);
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<SinkMsg>,
        msg: SinkMsg,
        st: &mut SinkState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            SinkMsg::Head(Wire(Some(h))) => {
                if let Some(tx) = st.head.take() {
                    let _ = tx.send(h);
                }
            }
            SinkMsg::Head(Wire(None)) => myself.stop(None),
            SinkMsg::Chunk(c) => {
                let gone = match &st.body {
                    Some(tx) => tx.send(c).await.is_err(),
                    None => true,
                };
                if gone {
                    // The client disconnected: stop the stream at the owner.
                    for m in ractor::pg::get_members(&relay_group(&st.owner)) {
                        let relay: ActorRef<RelayMsg> = m.into();
                        let _ = relay.cast(RelayMsg::Cancel(st.id.clone()));
                    }
                    myself.stop(None);
                }
            }
            SinkMsg::End(err) => {
                if !err.is_empty() {
                    tracing::warn!(id = %st.id, error = %err, "cluster: forwarded response failed");
                }
                myself.stop(None);
            }
            SinkMsg::Tick => {
                let lost = !st.cluster.is_up(&st.owner)
                    || ractor::pg::get_members(&relay_group(&st.owner)).is_empty();
                // A head must come; a body may stream for as long as it lives.
                let no_head = st.head.is_some() && st.started.elapsed() > Duration::from_secs(600);
                let client_gone = st.body.as_ref().is_some_and(|b| b.is_closed());
                if lost || no_head || client_gone {
                    if lost {
                        tracing::warn!(id = %st.id, owner = %st.owner, "cluster: owner node lost mid-response");
                    }
                    if client_gone && !lost {
                        for m in ractor::pg::get_members(&relay_group(&st.owner)) {
                            let relay: ActorRef<RelayMsg> = m.into();
                            let _ = relay.cast(RelayMsg::Cancel(st.id.clone()));
                        }
                    }
                    st.body = None;
                    myself.stop(None);
                }
            }
        }
        Ok(())
    }
}

impl Cluster {
    /// Starts this node's relay, serving forwarded requests with `handler`.
    pub async fn start_relay(&self, handler: Handler) -> anyhow::Result<()> {
        Actor::spawn(
            Some("cluster.http_relay".into()),
            HttpRelay,
            (self.settings.node_name.clone(), handler),
        )
        .await
        .map_err(|e| anyhow::anyhow!("http relay: {e}"))?;
        Ok(())
    }

    /// Sends a request to `owner` and waits for the response head; the
    /// body follows on the receiver. `Err` when the owner is unreachable.
    pub async fn forward(
        self: &Arc<Self>,
        owner: &str,
        mut req: WireRequest,
        body: Vec<u8>,
    ) -> Result<(WireHead, mpsc::Receiver<Vec<u8>>), String> {
        let relay: ActorRef<RelayMsg> = ractor::pg::get_members(&relay_group(owner))
            .into_iter()
            .next()
            .ok_or_else(|| format!("node {owner} is not reachable"))?
            .into();
        if !self.is_up(owner) {
            return Err(format!("node {owner} is down"));
        }
        if body.len() > MAX_FORWARD_BODY {
            return Err(format!(
                "a request body of {} bytes is too large to forward",
                body.len()
            ));
        }
        let id = uuid::Uuid::new_v4().simple().to_string();
        req.id = id.clone();
        req.from = self.settings.node_name.clone();
        let (head_tx, head_rx) = oneshot::channel();
        let (body_tx, body_rx) = mpsc::channel(64);
        let (sink, _) = Actor::spawn(
            None,
            ResponseSink,
            (id, owner.to_string(), self.clone(), head_tx, body_tx),
        )
        .await
        .map_err(|e| e.to_string())?;
        if let Err(e) = send_request(&relay, req, &body) {
            sink.stop(None);
            return Err(e);
        }
        match head_rx.await {
            Ok(head) => Ok((head, body_rx)),
            Err(_) => Err(format!("node {owner} did not answer")),
        }
    }
}

/// Casts a request to `relay`: the head with the first chunk of the body,
/// then the rest chunk by chunk (in order: one session carries them).
fn send_request(relay: &ActorRef<RelayMsg>, req: WireRequest, body: &[u8]) -> Result<(), String> {
    let id = req.id.clone();
    let mut pieces = body.chunks(MAX_CHUNK).peekable();
    let first = pieces.next().unwrap_or(&[]).to_vec();
    let complete = pieces.peek().is_none();
    relay
        .cast(RelayMsg::Request(Wire(Some(req)), first, complete))
        .map_err(|e| e.to_string())?;
    while let Some(piece) = pieces.next() {
        let last = pieces.peek().is_none();
        relay
            .cast(RelayMsg::Body(id.clone(), piece.to_vec(), last))
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}
