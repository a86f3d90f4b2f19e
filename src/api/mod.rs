//! The HTTP surface under `/api`: one file per resource group. Shared here:
//! the uniform error body, authentication (bearer or cookie), pagination and
//! the application state handed to every handler.

use clipforge_actors::accounts::Credential;
use clipforge_actors::accounts::{Account, AccountError};
use poem::Request;
use poem_openapi::auth::{ApiKey, Bearer};
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object, SecurityScheme};

pub mod auth;
pub mod billing;
pub mod clip_timeline;
pub mod clips;
pub mod credits;
pub mod export;
pub mod formats;
pub mod integrations;
pub mod keys;
pub mod media;
pub mod notifications;
pub mod openapi;
pub mod plans;
pub mod posts;
pub mod projects;
pub mod projects_types;
pub mod scopes;
pub mod templates;
pub mod webhooks;

pub use crate::session::SESSION_COOKIE;
pub use crate::state::State;

/// The one error body: `{"error": "<snake_case_code>", "message": "<text>"}`.
#[derive(Object, Debug, Clone)]
#[oai(example)]
pub struct ErrorBody {
    /// Stable, snake_case: what went wrong, for programs.
    pub error: String,
    /// What went wrong, for people.
    pub message: String,
}

impl poem_openapi::types::Example for ErrorBody {
    fn example() -> Self {
        ErrorBody {
            error: "invalid_field".into(),
            message: "clipDurationPreset: use auto, 15-30, 30-60 or 60-90".into(),
        }
    }
}

#[derive(ApiResponse, Debug)]
#[oai(bad_request_handler = "bad_request")]
pub enum ApiError {
    /// Invalid input.
    #[oai(status = 400)]
    BadRequest(Json<ErrorBody>),
    /// No or invalid session.
    #[oai(status = 401)]
    Unauthorized(Json<ErrorBody>),
    /// Not enough credits, or the plan must be bought first.
    #[oai(status = 402)]
    PaymentRequired(Json<ErrorBody>),
    /// The plan does not allow it.
    #[oai(status = 403)]
    Forbidden(Json<ErrorBody>),
    /// Not found (also another user's resource).
    #[oai(status = 404)]
    NotFound(Json<ErrorBody>),
    /// Conflict with the current state.
    #[oai(status = 409)]
    Conflict(Json<ErrorBody>),
    /// Upload larger than the plan allows.
    #[oai(status = 413)]
    PayloadTooLarge(Json<ErrorBody>),
    /// Unsupported media type.
    #[oai(status = 415)]
    UnsupportedMediaType(Json<ErrorBody>),
    /// Too many requests.
    #[oai(status = 429)]
    TooManyRequests(Json<ErrorBody>),
    /// Unexpected failure (no internals are shown).
    #[oai(status = 500)]
    Internal(Json<ErrorBody>),
    /// A service we depend on failed (e.g. the video platform could not be
    /// reached); trying again later may work.
    #[oai(status = 502)]
    BadGateway(Json<ErrorBody>),
    /// Overloaded or shutting down.
    #[oai(status = 503)]
    Unavailable(Json<ErrorBody>),
}

fn body(code: &str, message: impl Into<String>) -> Json<ErrorBody> {
    Json(ErrorBody {
        error: code.to_string(),
        message: message.into(),
    })
}

fn bad_request(err: poem::Error) -> ApiError {
    ApiError::BadRequest(body("invalid_request", err.to_string()))
}

impl ApiError {
    pub fn bad_request(code: &str, message: impl Into<String>) -> Self {
        ApiError::BadRequest(body(code, message))
    }
    pub fn unauthorized() -> Self {
        ApiError::Unauthorized(body(
            "unauthorized",
            "sign in first: send a valid session token or API key",
        ))
    }
    pub fn not_found(what: &str) -> Self {
        ApiError::NotFound(body("not_found", format!("{what} not found")))
    }
    pub fn conflict(code: &str, message: impl Into<String>) -> Self {
        ApiError::Conflict(body(code, message))
    }
    pub fn too_large(message: impl Into<String>) -> Self {
        ApiError::PayloadTooLarge(body("payload_too_large", message))
    }
    pub fn unsupported(message: impl Into<String>) -> Self {
        ApiError::UnsupportedMediaType(body("unsupported_media_type", message))
    }
    pub fn forbidden(code: &str, message: impl Into<String>) -> Self {
        ApiError::Forbidden(body(code, message))
    }
    pub fn payment_required(code: &str, message: impl Into<String>) -> Self {
        ApiError::PaymentRequired(body(code, message))
    }
    /// Logs the cause and answers 500 without internals.
    pub fn internal(context: &str, cause: impl std::fmt::Display) -> Self {
        tracing::error!(error = %cause, "{context}");
        ApiError::Internal(body(
            "internal_error",
            "something went wrong on our side; please try again",
        ))
    }
    pub fn unavailable(message: impl Into<String>) -> Self {
        ApiError::Unavailable(body("unavailable", message))
    }
    pub fn bad_gateway(code: &str, message: impl Into<String>) -> Self {
        ApiError::BadGateway(body(code, message))
    }
    pub fn unavailable_because(code: &str, message: impl Into<String>) -> Self {
        ApiError::Unavailable(body(code, message))
    }
}

/// An account error's status and code in the uniform error body; a
/// server fault's details go to the log only.
impl From<AccountError> for ApiError {
    fn from(e: AccountError) -> Self {
        use AccountError as E;
        let msg = e.to_string();
        match e {
            E::InvalidInput(_) => ApiError::BadRequest(body("invalid_input", msg)),
            E::InvalidCredentials => ApiError::Unauthorized(body("invalid_credentials", msg)),
            E::Unauthorized => ApiError::Unauthorized(body("unauthorized", msg)),
            E::InsufficientCredits { .. } => {
                ApiError::PaymentRequired(body("insufficient_credits", msg))
            }
            E::PlanNotAllowed(_) => ApiError::PaymentRequired(body("checkout_required", msg)),
            E::NotFound(_) => ApiError::NotFound(body("not_found", msg)),
            E::Conflict(_) => ApiError::Conflict(body("conflict", msg)),
            E::QuotaExceeded { .. } => {
                ApiError::PayloadTooLarge(body("storage_quota_exceeded", msg))
            }
            E::RateLimited { retry_after_secs } => {
                crate::ratelimit::note_retry_after(retry_after_secs);
                ApiError::TooManyRequests(body("rate_limited", msg))
            }
            E::Storage(_) | E::Internal(_) => ApiError::internal("account operation failed", msg),
        }
    }
}

pub type ApiResult<T> = Result<T, ApiError>;

/// An account operation's answer as the API gives it.
pub fn account<T>(r: Result<T, AccountError>) -> ApiResult<T> {
    r.map_err(ApiError::from)
}

/// A JSON body serialized ahead of time (a cached listing page), documented
/// as `T`.
pub struct RawJson<T>(pub bytes::Bytes, std::marker::PhantomData<T>);

impl<T> RawJson<T> {
    /// `body` must be `T` as JSON.
    pub fn new(body: bytes::Bytes) -> Self {
        RawJson(body, std::marker::PhantomData)
    }
}

impl<T: poem_openapi::types::Type + Send> poem_openapi::payload::Payload for RawJson<T> {
    const CONTENT_TYPE: &'static str = "application/json; charset=utf-8";

    fn schema_ref() -> poem_openapi::registry::MetaSchemaRef {
        T::schema_ref()
    }

    fn register(registry: &mut poem_openapi::registry::Registry) {
        T::register(registry);
    }
}

impl<T: Send> poem::IntoResponse for RawJson<T> {
    fn into_response(self) -> poem::Response {
        poem::Response::builder()
            .content_type("application/json; charset=utf-8")
            .body(self.0)
    }
}

impl<T: poem_openapi::types::Type + Send> poem_openapi::ApiResponse for RawJson<T> {
    fn meta() -> poem_openapi::registry::MetaResponses {
        use poem_openapi::payload::Payload;
        poem_openapi::registry::MetaResponses {
            responses: vec![poem_openapi::registry::MetaResponse {
                description: "",
                status: Some(200),
                status_range: None,
                content: vec![poem_openapi::registry::MetaMediaType {
                    content_type: Self::CONTENT_TYPE,
                    schema: Self::schema_ref(),
                }],
                headers: vec![],
            }],
        }
    }

    fn register(registry: &mut poem_openapi::registry::Registry) {
        <Self as poem_openapi::payload::Payload>::register(registry);
    }
}

/// The signed-in user.
#[derive(Clone, Debug)]
pub struct User {
    pub account: Account,
    /// A session, or an API key (then only within its scopes).
    pub credential: Credential,
    /// The raw session token or key of this request (never logged).
    pub token: String,
}

impl User {
    /// The session of the request; `None` when it came with an API key
    /// (operations that need a session refuse keys before this is asked).
    pub fn session(&self) -> Option<&clipforge_actors::accounts::SessionInfo> {
        match &self.credential {
            Credential::Session(s) => Some(s),
            Credential::Key(_) => None,
        }
    }
}

async fn check_token(req: &Request, token: &str) -> poem::Result<User> {
    let state = req
        .data::<State>()
        .ok_or_else(|| poem::Error::from_status(poem::http::StatusCode::INTERNAL_SERVER_ERROR))?;
    // A session is answered from the memory of the account's actor when it
    // is active here, else read on the blocking pool (`accounts::sessions`).
    // An API key was looked up and checked (scope, rate) before routing
    // (`scopes::gate`); a session is looked up here.
    let found = match req.data::<scopes::KeyCaller>() {
        Some(k) if k.token == token => Ok(Some((k.account.clone(), k.credential.clone()))),
        // A key is accepted only once the gate has checked it: fail closed.
        _ if clipforge_actors::accounts::is_api_key(token) => Ok(None),
        _ => state
            .engine
            .desk()
            .session(token)
            .await
            .map(|found| found.map(|(a, s)| (a, Credential::Session(s)))),
    };
    let Ok(Some((account, credential))) = found else {
        return Err(unauthorized_error());
    };
    Ok(User {
        account,
        credential,
        token: token.to_string(),
    })
}

/// A poem error whose response is the uniform 401 body.
pub fn unauthorized_error() -> poem::Error {
    let resp = poem::Response::builder()
        .status(poem::http::StatusCode::UNAUTHORIZED)
        .content_type("application/json; charset=utf-8")
        .body(r#"{"error":"unauthorized","message":"sign in first: send a valid session token or API key"}"#);
    poem::Error::from_response(resp)
}

async fn bearer_checker(req: &Request, bearer: Bearer) -> poem::Result<User> {
    check_token(req, &bearer.token).await
}

async fn cookie_checker(req: &Request, key: ApiKey) -> poem::Result<User> {
    check_token(req, &key.key).await
}

/// `Authorization: Bearer <session token or API key>`: the token sign-in
/// answers, or a key from `POST /keys` (`cf_…`), which may do only what its
/// scopes allow (403 `insufficient_scope` otherwise).
#[derive(SecurityScheme)]
#[oai(ty = "bearer", checker = "bearer_checker")]
pub struct BearerAuth(pub User);

/// The `clipforge.session_token` cookie set by sign-in.
#[derive(SecurityScheme)]
#[oai(
    ty = "api_key",
    key_name = "clipforge.session_token",
    key_in = "cookie",
    checker = "cookie_checker"
)]
pub struct CookieAuth(pub User);

/// Either the bearer header or the session cookie.
#[derive(SecurityScheme)]
pub enum Auth {
    Bearer(BearerAuth),
    Cookie(CookieAuth),
}

impl Auth {
    pub fn user(&self) -> &User {
        match self {
            Auth::Bearer(b) => &b.0,
            Auth::Cookie(c) => &c.0,
        }
    }
}

/// `page` from 1 (default 1), `limit` default 20, max 100; out-of-range values
/// are clamped (non-numbers are refused by the parameter parser with 400).
pub fn paging(page: Option<i64>, limit: Option<i64>) -> (usize, usize) {
    let page = page.unwrap_or(1).clamp(1, 1_000_000) as usize;
    let limit = limit.unwrap_or(20).clamp(1, 100) as usize;
    (page, limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn account_errors_map_to_statuses_and_codes() {
        use clipforge_actors::storage::kv::StorageError;
        use poem::IntoResponse;
        let cases = [
            (
                AccountError::InvalidInput("name: empty".into()),
                400,
                "invalid_input",
            ),
            (AccountError::InvalidCredentials, 401, "invalid_credentials"),
            (AccountError::Unauthorized, 401, "unauthorized"),
            (
                AccountError::InsufficientCredits {
                    needed: 3,
                    available: 1,
                },
                402,
                "insufficient_credits",
            ),
            (
                AccountError::PlanNotAllowed("buy".into()),
                402,
                "checkout_required",
            ),
            (AccountError::NotFound("caption template"), 404, "not_found"),
            (AccountError::Conflict("taken".into()), 409, "conflict"),
            (
                AccountError::QuotaExceeded {
                    needed: 1,
                    used: 2,
                    limit: 2,
                },
                413,
                "storage_quota_exceeded",
            ),
            (
                AccountError::RateLimited {
                    retry_after_secs: 9,
                },
                429,
                "rate_limited",
            ),
            (
                AccountError::Storage(StorageError::Corrupt("secret detail".into())),
                500,
                "internal_error",
            ),
        ];
        for (err, status, code) in cases {
            let what = err.to_string();
            let resp = ApiError::from(err).into_response();
            assert_eq!(resp.status().as_u16(), status, "{what}");
            let body: serde_json::Value =
                serde_json::from_str(&resp.into_body().into_string().await.unwrap()).unwrap();
            assert_eq!(body["error"], code, "{what}");
            if status == 500 {
                assert!(!body.to_string().contains("secret detail"), "{body}");
            }
        }
    }

    #[test]
    fn paging_is_clamped() {
        assert_eq!(paging(None, None), (1, 20));
        assert_eq!(paging(Some(0), Some(1000)), (1, 100));
        assert_eq!(paging(Some(3), Some(-5)), (3, 1));
    }
}
