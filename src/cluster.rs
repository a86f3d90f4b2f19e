//! Wiring of the cluster membership (`[cluster]`) and `GET /admin/cluster`.

use std::sync::Arc;

use clipforge_actors::cluster::{Cluster, ClusterSnapshot, Load, Role};
use clipforge_actors::service::Services;
use poem::web::Data;
use poem::{handler, Request, Response};

use crate::api::State;
use crate::config::Config;

/// This node's worker slots: projects running of `pipeline.workers`.
fn load_of(services: &Services) -> Load {
    let slots = services.settings.workers;
    let busy = slots.saturating_sub(services.pool.available_permits());
    Load {
        busy: busy as u32,
        slots: slots as u32,
        stages: services
            .stage_jobs
            .load(std::sync::atomic::Ordering::Acquire),
        stage_slots: slots as u32,
    }
}

/// Joins the cluster when `[cluster]` is on; `None` for a single node.
pub async fn start(
    config: &Config,
    services: &Arc<Services>,
) -> anyhow::Result<Option<Arc<Cluster>>> {
    let Some(settings) = config
        .cluster
        .settings(&config.node.name)
        .map_err(|e| anyhow::anyhow!(e))?
    else {
        return Ok(None);
    };
    let listen = settings.listen;
    let s = services.clone();
    let cluster = Cluster::start(settings, Arc::new(move || load_of(&s))).await?;
    tracing::info!(%listen, "cluster node server listening");
    let cluster = Arc::new(cluster);
    if cluster.has_role(Role::Worker) {
        cluster.start_worker(services.clone()).await?;
    }
    let _ = services.cluster.set(cluster.clone());
    Ok(Some(cluster))
}

/// Nodes, roles, state, load and last heartbeat age, as this node sees them.
#[handler]
pub fn admin_cluster(state: Data<&State>, req: &Request) -> Response {
    if !crate::app::admin_ok(&state, req) {
        return crate::app::admin_refused();
    }
    let snapshot = match &state.cluster {
        Some(c) => c.snapshot(),
        None => ClusterSnapshot::single(
            &state.config.node.name,
            &state.config.cluster.roles,
            load_of(&state.services),
        ),
    };
    Response::builder()
        .content_type("application/json")
        .body(serde_json::to_string(&snapshot).unwrap_or_default())
}
