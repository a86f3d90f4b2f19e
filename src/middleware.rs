//! The guarded part of every request, before and around the handler: CORS
//! preflight, rate limits (per address at the node that accepted the
//! connection, per account where the account is served), the body limit of
//! the route (declared and counted while reading), then cluster routing, the API key gate (`api::scopes`) and
//! the handler. `app::routes` adds logging, the uniform error body and the
//! response headers of [`crate::security::Guard::finish`].

use poem::{Endpoint, IntoResponse, Request, Response};

use clipforge_actors::accounts::Account;

use crate::bodylimit;
use crate::ratelimit::{too_many, Class};
use crate::state::State;

/// The account of a request (session or API key), looked up only where a
/// limit needs it.
async fn account_of(st: &State, req: &Request) -> Option<Account> {
    let token = crate::session::request_token(req)?;
    st.engine
        .desk()
        .caller(&token)
        .await
        .ok()
        .flatten()
        .map(|(a, _)| a)
}

/// The upload limit of the caller's plan; on a cluster node that does not
/// keep the account, the largest plan's (the owner checks the plan's).
fn upload_limit(st: &State, account: Option<&Account>) -> Option<u64> {
    let accounts = &st.engine.accounts();
    match account {
        Some(a) => Some(accounts.plan_limits(a.plan).upload_max_bytes),
        None if st.cluster.is_some() => {
            let t = accounts.plans();
            [&t.free, &t.creator, &t.pro, &t.enterprise]
                .iter()
                .map(|p| p.upload_max_bytes)
                .max()
        }
        None => None,
    }
}

fn upload_too_large(limit: u64) -> Response {
    let mut resp = crate::error_body::error_response(
        poem::http::StatusCode::PAYLOAD_TOO_LARGE,
        "payload_too_large",
        &format!(
            "the file is larger than your plan's upload limit of {} MB",
            limit / (1024 * 1024)
        ),
    );
    resp.headers_mut()
        .insert("connection", poem::http::HeaderValue::from_static("close"));
    resp
}

/// Runs `ep` on `req` within the limits.
pub async fn guarded<E: Endpoint>(st: &State, ep: &E, mut req: Request) -> poem::Result<Response> {
    let guard = &st.guard;
    if let Some(resp) = guard.preflight(&req) {
        return Ok(resp);
    }
    // Only the relay sets it now (clients' copies are removed on entry).
    let relayed = req.header(crate::security::FORWARDED).is_some();
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let class = Class::of(&method, &path);
    if !relayed {
        if let Some(resp) = guard.cross_site_write(&req) {
            bodylimit::discard(&mut req);
            return Ok(resp);
        }
    }
    if let (Some(class), Some(ip), false) = (class, crate::security::client_ip(&req), relayed) {
        if let Err(wait) = guard.rates.check_ip(class, ip) {
            bodylimit::discard(&mut req);
            return Ok(too_many(wait, "requests from your address"));
        }
    }
    let account = match class {
        Some(c) if c.per_account() => account_of(st, &req).await,
        _ => None,
    };
    let upload = (class == Some(Class::Upload))
        .then(|| upload_limit(st, account.as_ref()))
        .flatten();
    let limit = bodylimit::limit_for(&method, &path, guard.json_limit, upload);
    let refuse = |limit| match upload {
        Some(plan) if class == Some(Class::Upload) => upload_too_large(plan),
        _ => bodylimit::too_large(limit),
    };
    // An upload without a valid session gets its 401 from the handler,
    // which answers before reading the body.
    let unsigned_upload = class == Some(Class::Upload) && upload.is_none();
    if !unsigned_upload && bodylimit::declared_over(&mut req, limit) {
        return Ok(refuse(limit));
    }
    let tripped = bodylimit::limit(&mut req, limit);
    let result = match crate::cluster::route(st, &mut req).await {
        Some(resp) => Ok(resp),
        None => {
            if let (Some(class), Some(a)) = (class, &account) {
                if let Err(wait) = guard.rates.check_account(class, &a.id) {
                    bodylimit::discard(&mut req);
                    return Ok(too_many(wait, "requests for your account"));
                }
            }
            if let Some(refused) = crate::api::scopes::gate(st, &mut req).await {
                bodylimit::discard(&mut req);
                return Ok(refused);
            }
            ep.call(req).await.map(IntoResponse::into_response)
        }
    };
    if tripped.is_set() {
        return Ok(refuse(limit));
    }
    result
}
