//! What an API key needs for each operation (issue 31): `read` for reads
//! (GET), `publish` for platform connections and scheduling, `write` for
//! every other change (projects, uploads, templates, notifications); the
//! account itself (profile, password, sessions), billing, the keys and the
//! webhooks are managed only with a signed-in session.

use clipforge_actors::accounts::Credential;
use clipforge_actors::accounts::{is_api_key, Account, Scope};
use poem::http::{Method, StatusCode};
use poem::{Request, Response};

use crate::state::State;

/// A request's API key, checked by [`gate`]: the security schemes take it
/// from the request instead of looking the key up again.
#[derive(Clone)]
pub struct KeyCaller {
    pub token: String,
    pub account: Account,
    pub credential: Credential,
}

/// On the node that serves the request: when it comes with an API key,
/// checks the key's scope for the operation (403 `insufficient_scope`) and
/// its rate (429 with `Retry-After`), and leaves the key on the request.
/// An unknown or revoked key passes through to the security scheme's 401.
pub async fn gate(st: &State, req: &mut Request) -> Option<Response> {
    let token = crate::session::request_token(req).filter(|t| is_api_key(t))?;
    let (account, credential) = st.engine.desk().caller(&token).await.ok()??;
    let Credential::Key(key) = &credential else {
        return None;
    };
    let refused = match needed(req.method(), req.uri().path()) {
        Needed::Session => Some(
            "this operation needs a signed-in session: API keys cannot manage the account, billing, keys or webhooks"
                .to_string(),
        ),
        Needed::Scope(scope) if !key.allows(scope) => Some(format!(
            "this API key lacks the \"{}\" scope this operation needs",
            scope.as_str()
        )),
        Needed::Scope(_) => None,
    };
    if let Some(message) = refused {
        return Some(crate::error_body::error_response(
            StatusCode::FORBIDDEN,
            "insufficient_scope",
            &message,
        ));
    }
    if let Err(wait) = st.guard.rates.check_key(&key.id) {
        return Some(crate::ratelimit::too_many(
            wait,
            "requests with this API key",
        ));
    }
    req.set_data(KeyCaller {
        token,
        account,
        credential,
    });
    None
}

/// What an operation asks of the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Needed {
    /// A key with this scope (a session may do anything).
    Scope(Scope),
    /// A signed-in session: no key may.
    Session,
}

/// The need of `method` on `path` (the request's path, `/api/...`).
pub fn needed(method: &Method, path: &str) -> Needed {
    let path = path.strip_prefix("/api").unwrap_or(path);
    let under = |prefix: &str| {
        path == prefix
            || path
                .strip_prefix(prefix)
                .is_some_and(|rest| rest.starts_with('/'))
    };
    if under("/auth")
        || under("/stripe")
        || under("/keys")
        || under("/webhooks")
        || under("/credits/select-plan")
    {
        return Needed::Session;
    }
    // The MCP endpoint: its tools call the operations, each with its own
    // scope; listing them needs a key that can at least read.
    if method == Method::GET || method == Method::HEAD || path == "/mcp" {
        return Needed::Scope(Scope::Read);
    }
    let publishing = under("/integrations")
        || under("/clips/scheduled")
        || (path.starts_with("/clips/") && path.trim_end_matches('/').ends_with("/schedule"))
        || (path.starts_with("/projects/")
            && path.trim_end_matches('/').ends_with("/bulk-schedule"));
    Needed::Scope(if publishing {
        Scope::Publish
    } else {
        Scope::Write
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_operation_needs_one_thing() {
        use Needed::{Scope as S, Session};
        let cases = [
            (Method::GET, "/api/projects", S(Scope::Read)),
            (Method::GET, "/api/projects/p1/export", S(Scope::Read)),
            (Method::POST, "/api/projects", S(Scope::Write)),
            (Method::DELETE, "/api/projects/p1", S(Scope::Write)),
            (Method::POST, "/api/upload", S(Scope::Write)),
            (Method::PUT, "/api/caption-templates/t1", S(Scope::Write)),
            (
                Method::POST,
                "/api/projects/p1/bulk-schedule",
                S(Scope::Publish),
            ),
            (Method::POST, "/api/clips/c1/schedule", S(Scope::Publish)),
            (Method::PATCH, "/api/clips/scheduled/s1", S(Scope::Publish)),
            (
                Method::POST,
                "/api/integrations/tiktok/connect",
                S(Scope::Publish),
            ),
            (Method::GET, "/api/integrations", S(Scope::Read)),
            (Method::GET, "/api/credits", S(Scope::Read)),
            (Method::POST, "/api/credits/select-plan", Session),
            (Method::GET, "/api/auth/get-session", Session),
            (Method::POST, "/api/auth/sign-out", Session),
            (Method::GET, "/api/keys", Session),
            (Method::DELETE, "/api/keys/k1", Session),
            (Method::POST, "/api/webhooks", Session),
            (Method::GET, "/api/webhooks/w1/deliveries", Session),
            (Method::POST, "/api/stripe/checkout", Session),
            // A prefix is a whole path segment.
            (Method::GET, "/api/keystone", S(Scope::Read)),
        ];
        for (method, path, want) in cases {
            assert_eq!(needed(&method, path), want, "{method} {path}");
        }
    }
}
