//! Credits and plans (contract 4.6): balance, plan selection, and the ledger
//! that explains every credit.

use poem::web::Data;
use poem_openapi::param::Query;
use poem_openapi::payload::Json;
use poem_openapi::{Object, OpenApi, Tags};
use serde_json::Value;

use super::{account, paging, ApiError, ApiResult, Auth, RawJson, State};
use clipforge_actors::accounts::Plan;

#[derive(Tags)]
enum Tag {
    /// Credits and plans.
    Credits,
}

pub struct CreditsApi;

#[derive(Object)]
struct SelectPlan {
    /// free, creator, pro or enterprise.
    plan: String,
}

fn json<T: serde::Serialize>(v: &T) -> ApiResult<Value> {
    serde_json::to_value(v).map_err(|e| ApiError::internal("encoding", e))
}

#[OpenApi(prefix_path = "/credits", tag = "Tag::Credits")]
impl CreditsApi {
    /// Balance of the current cycle: `{plan, credits, totalCredits}`.
    #[oai(path = "/", method = "get")]
    async fn balance(&self, state: Data<&State>, auth: Auth) -> ApiResult<RawJson> {
        let user = &auth.user().account;
        let id = user.id.clone();
        // A plain read (sled cache) answers inline, serialized once; a due
        // renewal writes, so it goes through the account's actor like every
        // change.
        if let Some(b) = account(Ok(state.services.accounts.peek_balance_of(user)))? {
            let body = serde_json::to_vec(&b).map_err(|e| ApiError::internal("encoding", e))?;
            return Ok(RawJson(body.into()));
        }
        let b = account(
            state
                .services
                .with_account(&id.clone(), move |a| a.balance(&id))
                .await,
        )?;
        let body = serde_json::to_vec(&b).map_err(|e| ApiError::internal("encoding", e))?;
        Ok(RawJson(body.into()))
    }

    /// Switch plan: free always; a paid plan only with an entitlement (else 402).
    #[oai(path = "/select-plan", method = "post")]
    async fn select_plan(
        &self,
        state: Data<&State>,
        auth: Auth,
        body: Json<SelectPlan>,
    ) -> ApiResult<Json<Value>> {
        let plan: Plan = body.0.plan.parse().map_err(|_| {
            ApiError::bad_request("invalid_plan", "plan: use free, creator, pro or enterprise")
        })?;
        let id = auth.user().account.id.clone();
        account(
            state
                .services
                .with_account(&id.clone(), move |a| a.select_plan(&id, plan))
                .await,
        )?;
        Ok(Json(
            serde_json::json!({ "status": "ok", "plan": plan.as_str() }),
        ))
    }

    /// Where the credits went (newest first): `{entries, total, page, limit}`.
    #[oai(path = "/ledger", method = "get")]
    async fn ledger(
        &self,
        state: Data<&State>,
        auth: Auth,
        page: Query<Option<i64>>,
        limit: Query<Option<i64>>,
    ) -> ApiResult<Json<Value>> {
        let (page, limit) = paging(page.0, limit.0);
        let id = auth.user().account.id.clone();
        let ledger = account(
            state
                .services
                .with_account(&id.clone(), move |a| {
                    a.ledger(&id, page as u64, limit as u64)
                })
                .await,
        )?;
        Ok(Json(json(&ledger)?))
    }
}
