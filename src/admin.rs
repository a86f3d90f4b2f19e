//! `/admin/actors`: the node's supervision tree as it runs (admin token).

use poem::http::StatusCode;
use poem::web::{Data, Path as PPath};
use poem::{handler, Request, Response};
use ractor::ActorCell;
use serde_json::{json, Value};

use crate::error_body::error_response;
use crate::state::State;

fn age_secs(started: std::time::Duration) -> f64 {
    (started.as_secs_f64() * 1000.0).round() / 1000.0
}

fn cell_name(c: &ActorCell) -> String {
    c.get_name()
        .unwrap_or_else(|| format!("actor:{}", c.get_id()))
}

/// Every actor of this node, each with its kind, id, supervisor, restart
/// count, mailbox length (where counted) and age, supervisors first.
fn actor_views(state: &State) -> Vec<Value> {
    let s = &state.engine;
    let tree = s.tree();
    let mut actors = Vec::new();
    if let Some(node) = tree.node_cell() {
        actors.push(json!({
            "name": "supervisor:node", "kind": "supervisor", "id": "node",
            "supervisor": null, "state": format!("{:?}", node.get_status()),
            "restarts": 0, "mailbox": null, "uptimeSecs": age_secs(tree.uptime()),
            "policy": "one-for-one, 3 restarts in 60 s, then the process exits",
            "children": tree.branches().iter().map(|b| format!("supervisor:{}", b.name)).collect::<Vec<_>>(),
        }));
    }
    for b in tree.branches() {
        let cell = b.cell();
        actors.push(json!({
            "name": format!("supervisor:{}", b.name), "kind": "supervisor", "id": b.name,
            "supervisor": "supervisor:node",
            "state": cell.as_ref().map(|c| format!("{:?}", c.get_status())).unwrap_or_else(|| "Stopped".into()),
            "restarts": b.own_restarts(), "mailbox": null, "uptimeSecs": age_secs(b.uptime()),
            "childFailures": b.child_failures(),
            "children": cell.map(|c| c.get_children().len()).unwrap_or(0),
        }));
    }
    // Clip render batches: one-shot children of the projects branch.
    for c in tree
        .projects
        .cell()
        .map(|s| s.get_children())
        .unwrap_or_default()
    {
        let name = cell_name(&c);
        if name.starts_with("render:") {
            actors.push(json!({
                "name": name, "kind": "render", "id": name, "supervisor": "supervisor:projects",
                "state": format!("{:?}", c.get_status()),
                "restarts": 0, "mailbox": null, "uptimeSecs": null, "children": [],
            }));
        }
    }
    for (id, p) in s.projects().live_projects() {
        let name = format!("project:{id}");
        let children = p.actor.get_children();
        for c in &children {
            actors.push(json!({
                "name": cell_name(c), "kind": "stage", "id": cell_name(c).rsplit(':').next(),
                "supervisor": name, "state": format!("{:?}", c.get_status()),
                "restarts": null, "mailbox": null, "uptimeSecs": null, "children": [],
            }));
        }
        actors.push(json!({
            "name": name, "kind": "project", "id": id,
            "supervisor": "supervisor:projects",
            "state": format!("{:?}", p.actor.get_status()),
            "restarts": tree.projects.restarts_of(&id),
            "mailbox": p.meta.mailbox(), "uptimeSecs": age_secs(p.meta.uptime()),
            "children": children.iter().map(cell_name).collect::<Vec<_>>(),
        }));
    }
    for u in s.desk().live() {
        actors.push(json!({
            "name": format!("user:{}", u.user_id), "kind": "user", "id": u.user_id,
            "supervisor": "supervisor:accounts",
            "state": format!("{:?}", u.actor.get_status()),
            "restarts": tree.accounts.restarts_of(&u.user_id),
            "mailbox": u.meta.mailbox(), "uptimeSecs": age_secs(u.meta.uptime()),
            "idleSecs": u.idle_secs, "children": [],
        }));
    }
    for (id, a) in state.publishing.live_posts() {
        actors.push(json!({
            "name": format!("post:{id}"), "kind": "schedule", "id": id,
            "supervisor": "supervisor:scheduler",
            "state": format!("{:?}", a.get_status()),
            "restarts": tree.scheduler.restarts_of(&id),
            "mailbox": null, "uptimeSecs": null, "children": [],
        }));
    }
    if state.cluster.is_some() {
        for c in tree
            .cluster
            .cell()
            .map(|s| s.get_children())
            .unwrap_or_default()
        {
            let name = cell_name(&c);
            actors.push(json!({
                "name": name, "kind": "cluster", "id": name,
                "supervisor": "supervisor:cluster", "state": format!("{:?}", c.get_status()),
                "restarts": tree.cluster.restarts_of(&name), "mailbox": null, "uptimeSecs": null,
                "children": c.get_children().iter().map(cell_name).collect::<Vec<_>>(),
            }));
        }
    }
    // The fixed service actors of the webhooks and housekeeping branches.
    for branch in [&tree.webhooks, &tree.housekeeping] {
        for c in branch.cell().map(|s| s.get_children()).unwrap_or_default() {
            let name = cell_name(&c);
            actors.push(json!({
                "name": name, "kind": branch.name, "id": name,
                "supervisor": format!("supervisor:{}", branch.name), "state": format!("{:?}", c.get_status()),
                "restarts": branch.restarts_of(&name), "mailbox": null, "uptimeSecs": null,
                "children": [],
            }));
        }
    }
    actors
}

fn json_response(body: Value) -> Response {
    Response::builder()
        .content_type("application/json")
        .body(body.to_string())
}

#[handler]
pub fn admin_actors(state: Data<&State>, req: &Request) -> Response {
    if !admin_ok(&state, req) {
        return admin_refused();
    }
    let load = state.engine.load();
    json_response(json!({
        "node": state.config.node.name,
        "workers": { "total": load.slots, "busy": load.busy },
        "actors": actor_views(&state),
    }))
}

/// One actor by name (`project:<id>`, `user:<id>`, `post:<id>`,
/// `supervisor:<branch>`), with a project's stored state and progress.
#[handler]
pub async fn admin_actor(state: Data<&State>, name: PPath<String>, req: &Request) -> Response {
    if !admin_ok(&state, req) {
        return admin_refused();
    }
    let Some(mut view) = actor_views(&state)
        .into_iter()
        .find(|a| a["name"] == name.0.as_str())
    else {
        return error_response(
            StatusCode::NOT_FOUND,
            "not_found",
            "no live actor by that name on this node (idle actors are passivated)",
        );
    };
    view["node"] = json!(state.config.node.name);
    if view["kind"] == "project" {
        let id = view["id"].as_str().unwrap_or_default().to_string();
        let found = async {
            use clipforge_actors::projects::records::{load_project_async, owner_of_async};
            let kv = &**state.engine.kv();
            match owner_of_async(kv, &id).await? {
                Some(user) => load_project_async(kv, &user, &id).await,
                None => Ok(None),
            }
        }
        .await;
        if let Ok(Some(p)) = found {
            view["project"] = json!({
                "userId": p.user_id, "title": p.title, "state": p.state.as_str(),
                "stepProgress": clipforge_actors::projects::records::step_progress_json(&p.step_progress),
            });
        }
    }
    json_response(view)
}

pub(crate) fn admin_refused() -> Response {
    error_response(
        StatusCode::UNAUTHORIZED,
        "unauthorized",
        "admin token required",
    )
}

pub(crate) fn admin_ok(state: &State, req: &Request) -> bool {
    let token = state.config.auth.admin_token.expose();
    if token.is_empty() {
        return false;
    }
    let given = req
        .header("authorization")
        .and_then(|h| h.strip_prefix("Bearer "))
        .unwrap_or("");
    given.len() == token.len()
        && given
            .bytes()
            .zip(token.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}
