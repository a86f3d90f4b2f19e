//! Stripe billing (contract 4.6): checkout, the return path, the customer
//! portal and the webhook; and the operators' plan grant
//! (`POST /admin/accounts/:id/plan`).

use std::sync::Arc;

use clipforge_actors::accounts::actor::AccountMsg;
use clipforge_actors::accounts::Plan as AccountPlan;
use clipforge_actors::billing::{Billing, BillingError, SignatureError};
use poem::http::StatusCode;
use poem::web::{Data, Path as PPath};
use poem::{handler, Request, Response};
use poem_openapi::param::{Header, Path};
use poem_openapi::payload::{Binary, Json};
use poem_openapi::{Object, OpenApi, Tags};
use serde_json::{json, Value};

use super::formats::{Frequency, PaidPlan, Plan, Text, Uri, WebhookResult};
use super::{account, ApiError, ApiResult, Auth, ErrorBody, State};
use crate::admin::admin_ok;
use crate::error_body::error_response;

#[derive(Tags)]
enum Tag {
    /// Plans bought through Stripe.
    Billing,
}

pub struct BillingApi;

#[derive(Object)]
#[oai(example)]
struct CheckoutRequest {
    plan: PaidPlan,
    frequency: Frequency,
}

impl poem_openapi::types::Example for CheckoutRequest {
    fn example() -> Self {
        CheckoutRequest {
            plan: "pro".into(),
            frequency: "yearly".into(),
        }
    }
}

#[derive(Object)]
struct UrlResponse {
    /// Where to send the user (Stripe's hosted page).
    url: Uri,
}

/// A checkout seen from the return path.
#[derive(Object)]
#[oai(rename_all = "camelCase")]
struct CheckoutState {
    session_id: Text,
    /// Stripe's session status: `open`, `complete` or `expired`.
    status: Text,
    /// Stripe's payment status: `paid`, `unpaid` or `no_payment_required`.
    payment_status: Text,
    /// Whether the bought plan is active on the account now.
    activated: bool,
    /// The account's plan after this call.
    plan: Plan,
}

/// What the webhook did with an event.
#[derive(Object)]
#[oai(rename_all = "camelCase")]
struct WebhookReceipt {
    /// Always true.
    received: bool,
    event_id: Text,
    #[oai(rename = "type")]
    event_type: Text,
    /// `changed`, `unchanged`, `duplicate` or `ignored`.
    result: WebhookResult,
}

fn error(status: StatusCode, code: &str, message: impl Into<String>) -> ApiError {
    let body = Json(ErrorBody {
        error: code.to_string(),
        message: message.into(),
    });
    match status {
        StatusCode::BAD_REQUEST => ApiError::BadRequest(body),
        StatusCode::NOT_FOUND => ApiError::NotFound(body),
        StatusCode::CONFLICT => ApiError::Conflict(body),
        _ => ApiError::Unavailable(body),
    }
}

impl From<BillingError> for ApiError {
    fn from(e: BillingError) -> Self {
        match e {
            BillingError::InvalidInput(m) => error(StatusCode::BAD_REQUEST, "invalid_input", m),
            BillingError::Signature(s) => error(
                StatusCode::BAD_REQUEST,
                "invalid_signature",
                format!("webhook refused: {s}"),
            ),
            BillingError::NotFound(what) => ApiError::not_found(what),
            BillingError::Conflict { code, message } => error(StatusCode::CONFLICT, code, message),
            BillingError::Provider(cause) => {
                tracing::warn!(error = %cause, "stripe call failed");
                error(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "payment_provider_error",
                    "the payment provider could not be reached or refused the request; try again",
                )
            }
            BillingError::Account(e) => e.into(),
            BillingError::Actor(cause) => ApiError::internal("billing account actor", cause),
        }
    }
}

/// Billing, or 503 `billing_not_configured`.
fn billing(state: &State) -> ApiResult<Arc<Billing>> {
    state.billing.clone().ok_or_else(|| {
        error(
            StatusCode::SERVICE_UNAVAILABLE,
            "billing_not_configured",
            "billing is not configured on this server (Stripe keys, webhook secret, price ids and URLs)",
        )
    })
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

#[OpenApi(prefix_path = "/stripe", tag = "Tag::Billing")]
impl BillingApi {
    /// Open a Stripe Checkout Session (subscription) for `plan` (creator|pro)
    /// billed `frequency` (monthly|yearly): `{url}`. An account with an
    /// active subscription changes plan in the customer portal (409).
    #[oai(path = "/checkout", method = "post", operation_id = "createCheckout")]
    async fn checkout(
        &self,
        state: Data<&State>,
        auth: Auth,
        body: Json<CheckoutRequest>,
    ) -> ApiResult<Json<UrlResponse>> {
        let billing = billing(&state)?;
        let user = &auth.user().account;
        let url = billing
            .checkout(state.engine.desk(), user, &body.0.plan, &body.0.frequency)
            .await?;
        Ok(Json(UrlResponse { url: url.into() }))
    }

    /// The return path (the success URL's `session_id`): reads the session
    /// and activates the plan at once when it is paid. `{sessionId, status,
    /// paymentStatus, activated, plan}`.
    #[oai(
        path = "/checkout/:session_id",
        method = "get",
        operation_id = "getCheckout"
    )]
    async fn checkout_status(
        &self,
        state: Data<&State>,
        auth: Auth,
        session_id: Path<String>,
    ) -> ApiResult<Json<CheckoutState>> {
        let billing = billing(&state)?;
        let user_id = auth.user().account.id.clone();
        let status = billing
            .checkout_status(state.engine.desk(), &user_id, &session_id.0)
            .await?;
        Ok(Json(CheckoutState {
            session_id: status.session_id.into(),
            status: status.status.into(),
            payment_status: status.payment_status.into(),
            activated: status.activated,
            plan: status.plan.as_str().into(),
        }))
    }

    /// A Stripe customer-portal session (invoices, payment method,
    /// cancellation): `{url}`; 409 when the account never paid.
    #[oai(
        path = "/customer-portal",
        method = "post",
        operation_id = "customerPortal"
    )]
    async fn customer_portal(
        &self,
        state: Data<&State>,
        auth: Auth,
    ) -> ApiResult<Json<UrlResponse>> {
        let billing = billing(&state)?;
        let user_id = auth.user().account.id.clone();
        let url = billing
            .customer_portal(state.engine.desk(), &user_id)
            .await?;
        Ok(Json(UrlResponse { url: url.into() }))
    }

    /// Stripe's webhook endpoint: the raw event, signed in `Stripe-Signature`
    /// (a missing, wrong or stale signature is 400 and changes nothing).
    /// Each event is applied once: `{received, eventId, type, result}`.
    #[oai(path = "/webhook", method = "post", operation_id = "stripeWebhook")]
    async fn webhook(
        &self,
        state: Data<&State>,
        #[oai(name = "Stripe-Signature")] signature: Header<Option<String>>,
        body: Binary<Vec<u8>>,
    ) -> ApiResult<Json<WebhookReceipt>> {
        let billing = billing(&state)?;
        let outcome = billing
            .handle_webhook(
                state.engine.desk(),
                &body.0,
                signature.0.as_deref(),
                unix_now(),
            )
            .await
            .inspect_err(|e| {
                if let BillingError::Signature(SignatureError::Stale | SignatureError::Mismatch) = e
                {
                    tracing::warn!(error = %e, "stripe webhook refused");
                }
            })?;
        tracing::info!(event_id = %outcome.event_id, event_type = %outcome.event_type, result = outcome.result, "stripe event");
        Ok(Json(WebhookReceipt {
            received: true,
            event_id: outcome.event_id.into(),
            event_type: outcome.event_type.into(),
            result: outcome.result.into(),
        }))
    }
}

/// `POST /admin/accounts/:id/plan {plan}` (admin token): `enterprise` grants
/// and activates the enterprise plan, `free` withdraws it.
#[handler]
pub async fn admin_set_plan(
    state: Data<&State>,
    id: PPath<String>,
    req: &Request,
    body: poem::web::Json<Value>,
) -> Response {
    if !admin_ok(&state, req) {
        return error_response(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "admin token required",
        );
    }
    let plan = match body
        .0
        .get("plan")
        .and_then(Value::as_str)
        .map(str::parse::<AccountPlan>)
    {
        Some(Ok(plan)) => plan,
        _ => {
            return error_response(
                StatusCode::BAD_REQUEST,
                "invalid_plan",
                "plan: use enterprise (grant) or free (withdraw)",
            )
        }
    };
    let user_id = id.0;
    let result = account(
        state
            .engine
            .call_account(&user_id, |reply| AccountMsg::SetPlanByOperator {
                plan,
                reply,
            })
            .await,
    );
    match result {
        Ok(plan) => {
            tracing::info!(user_id = %user_id, plan = %plan, "plan set by an operator");
            Response::builder()
                .content_type("application/json")
                .body(json!({ "status": "ok", "plan": plan.as_str() }).to_string())
        }
        Err(e) => poem::IntoResponse::into_response(e),
    }
}
