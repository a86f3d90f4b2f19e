//! Credits and plans (contract 4.6): balance, plan selection, and the ledger
//! that explains every credit.

use poem::web::Data;
use poem_openapi::param::Query;
use poem_openapi::payload::Json;
use poem_openapi::types::Example;
use poem_openapi::{Object, OpenApi, Tags};
use serde_json::Value;

use super::formats::{DateTime, LedgerEntryType, OkStatus, Plan, Text, Uuid};
use super::{account, paging, ApiError, ApiResult, Auth, RawJson, State};
use clipforge_actors::accounts::actor::AccountMsg;
use clipforge_actors::accounts::CreditBalance;
use clipforge_actors::billing::Billing;
use clipforge_actors::projects::api::ProjectError;

#[derive(Tags)]
pub(super) enum Tag {
    /// Credits and plans.
    Credits,
}

pub struct CreditsApi;

#[derive(Object)]
#[oai(example)]
struct SelectPlan {
    /// `free` always; a paid plan needs an entitlement (else 402).
    plan: Plan,
}

impl Example for SelectPlan {
    fn example() -> Self {
        SelectPlan {
            plan: "free".into(),
        }
    }
}

/// The credit balance (contract 2.6), the cycle's dates and the storage
/// quota. On an unlimited plan (enterprise) `credits` and `totalCredits` are
/// both 100000 whatever was used, a number a client can print as it is;
/// `unlimited` is true and nothing is counted.
#[derive(Object)]
#[oai(rename_all = "camelCase", example)]
struct Balance {
    plan: Plan,
    /// Available in the current cycle after reservations (100000 when
    /// unlimited).
    credits: u64,
    /// The cycle's total (100000 when unlimited).
    total_credits: u64,
    /// Held by projects still processing.
    reserved: u64,
    /// The enterprise plan: credits are not counted.
    unlimited: bool,
    cycle_started_at: DateTime,
    renews_at: DateTime,
    /// Bytes of uploads counted against the storage quota (an upload leaves
    /// it when the last project made from it is deleted).
    storage_used_bytes: u64,
    /// The plan's storage quota in bytes.
    storage_limit_bytes: u64,
    /// When the paid plan becomes free: its Stripe subscription is set to
    /// cancel at the end of the paid period (free was selected). `null`
    /// when nothing is scheduled.
    #[oai(nullable)]
    plan_ends_at: Option<DateTime>,
}

impl Example for Balance {
    fn example() -> Self {
        Balance {
            plan: "free".into(),
            credits: 42,
            total_credits: 60,
            reserved: 3,
            unlimited: false,
            cycle_started_at: "2026-05-01T18:00:00.000Z".into(),
            renews_at: "2026-05-31T18:00:00.000Z".into(),
            storage_used_bytes: 734_003_200,
            storage_limit_bytes: 5_368_709_120,
            plan_ends_at: None,
        }
    }
}

impl Balance {
    /// `b` with the storage figures (`used`, `limit`).
    fn new(b: CreditBalance, (used, limit): (u64, u64)) -> Self {
        Balance {
            plan: b.plan.as_str().into(),
            credits: b.credits,
            total_credits: b.total_credits,
            reserved: b.reserved,
            unlimited: b.unlimited,
            cycle_started_at: b.cycle_started_at.into(),
            renews_at: b.renews_at.into(),
            storage_used_bytes: used,
            storage_limit_bytes: limit,
            plan_ends_at: None,
        }
    }
}

#[derive(Object)]
#[oai(rename_all = "camelCase")]
struct PlanSelected {
    status: OkStatus,
    /// The account's plan now.
    plan: Plan,
    /// Selecting `free` with a paid Stripe subscription cancels it at the
    /// end of its paid period: the paid plan stays until then, and this is
    /// when it becomes free. `null` when the plan changed at once.
    #[oai(nullable)]
    changes_at: Option<DateTime>,
}

/// One movement of credits.
#[derive(Object)]
#[oai(rename_all = "camelCase")]
struct LedgerEntry {
    #[oai(rename = "type")]
    kind: LedgerEntryType,
    amount: u64,
    /// The project it concerns; `null` for grants and renewals.
    #[oai(nullable)]
    project_id: Option<Uuid>,
    /// That project's title; `null` without a project or once it was
    /// deleted.
    #[oai(nullable)]
    project_title: Option<Text>,
    note: Text,
    /// Credits available after this entry (0 on unlimited plans).
    balance_after: u64,
    created_at: DateTime,
}

/// A page of the ledger, newest entry first.
#[derive(Object)]
struct LedgerPage {
    entries: Vec<LedgerEntry>,
    total: u64,
    page: u64,
    limit: u64,
}

/// `p` with the title of each project it names (`titles`: by id).
fn ledger_page(
    p: clipforge_actors::accounts::LedgerPage,
    titles: &std::collections::HashMap<String, String>,
) -> ApiResult<LedgerPage> {
    // The entry type is named by the engine's serde form.
    let kind = |k| -> ApiResult<LedgerEntryType> {
        match serde_json::to_value(k).map_err(|e| ApiError::internal("encoding", e))? {
            Value::String(s) => Ok(s.into()),
            other => Err(ApiError::internal("encoding", other)),
        }
    };
    let mut entries = Vec::with_capacity(p.entries.len());
    for e in p.entries {
        entries.push(LedgerEntry {
            kind: kind(e.kind)?,
            amount: e.amount,
            project_title: e
                .project_id
                .as_ref()
                .and_then(|id| titles.get(id))
                .map(|t| t.clone().into()),
            project_id: e.project_id.map(Uuid),
            note: e.note.into(),
            balance_after: e.balance_after,
            created_at: e.created_at.into(),
        });
    }
    Ok(LedgerPage {
        entries,
        total: p.total,
        page: p.page,
        limit: p.limit,
    })
}

/// A plan bought through Stripe.
fn paid(plan: clipforge_actors::accounts::Plan) -> bool {
    use clipforge_actors::accounts::Plan;
    matches!(plan, Plan::Creator | Plan::Pro)
}

/// [`Balance`] as its body is written: serialised straight from the
/// fields, without the `serde_json::Value` that `ToJSON` builds first (the
/// balance is the most-read authenticated route; `make bench-api`). A test
/// holds it to [`Balance`]'s own JSON.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct BalanceBody<'a> {
    plan: &'a str,
    credits: u64,
    total_credits: u64,
    reserved: u64,
    unlimited: bool,
    cycle_started_at: &'a str,
    renews_at: &'a str,
    storage_used_bytes: u64,
    storage_limit_bytes: u64,
    plan_ends_at: Option<&'a str>,
}

impl<'a> From<&'a Balance> for BalanceBody<'a> {
    fn from(b: &'a Balance) -> Self {
        BalanceBody {
            plan: &b.plan,
            credits: b.credits,
            total_credits: b.total_credits,
            reserved: b.reserved,
            unlimited: b.unlimited,
            cycle_started_at: &b.cycle_started_at,
            renews_at: &b.renews_at,
            storage_used_bytes: b.storage_used_bytes,
            storage_limit_bytes: b.storage_limit_bytes,
            plan_ends_at: b.plan_ends_at.as_deref(),
        }
    }
}

fn raw(b: CreditBalance, storage: (u64, u64), ends: Option<String>) -> ApiResult<RawJson<Balance>> {
    let mut balance = Balance::new(b, storage);
    balance.plan_ends_at = ends.map(DateTime::from);
    let body = serde_json::to_vec(&BalanceBody::from(&balance))
        .map_err(|e| ApiError::internal("encoding", e))?;
    Ok(RawJson::new(body.into()))
}

#[OpenApi(prefix_path = "/credits", tag = "Tag::Credits")]
impl CreditsApi {
    /// Balance of the current cycle: `{plan, credits, totalCredits}`, with
    /// the storage quota's use.
    #[oai(path = "/", method = "get", operation_id = "getCredits")]
    async fn balance(&self, state: Data<&State>, auth: Auth) -> ApiResult<RawJson<Balance>> {
        let user = &auth.user().account;
        let id = user.id.clone();
        let accounts = &state.engine.accounts();
        // Answered from the account actor's memory (loaded once per
        // activation, the storage counter on its first request); a due
        // renewal writes, so it goes to the actor as a command like every
        // change.
        let held = account(state.engine.account_state(&id).await)?;
        let used = match held.as_ref().and_then(|h| h.storage()) {
            Some(used) => used,
            None => account(
                state
                    .engine
                    .call_account(&id, AccountMsg::StorageUsed)
                    .await,
            )?,
        };
        let storage = (used, accounts.plan_limits(user.plan).storage_bytes);
        // Only a paid plan with billing on can be set to end.
        let ends = if state.billing.is_some() && paid(user.plan) {
            let record = account(accounts.billing_record(&id).await)?;
            Billing::plan_ends_at(record.subscription.as_ref())
        } else {
            None
        };
        if let Some(b) = held.and_then(|h| accounts.held_balance(&h)) {
            return raw(b, storage, ends);
        }
        let b = account(state.engine.call_account(&id, AccountMsg::Balance).await)?;
        raw(b, storage, ends)
    }

    /// Switch plan: a paid plan only with an entitlement (else 402); `free`
    /// always, at once, or, with a paid Stripe subscription, at the end of
    /// its paid period (the subscription is cancelled then; `changesAt`).
    /// Choosing the paid plan of a subscription set to end keeps it (the
    /// cancellation is withdrawn at Stripe).
    #[oai(path = "/select-plan", method = "post", operation_id = "selectPlan")]
    async fn select_plan(
        &self,
        state: Data<&State>,
        auth: Auth,
        body: Json<SelectPlan>,
    ) -> ApiResult<Json<PlanSelected>> {
        let plan: clipforge_actors::accounts::Plan = body.0.plan.parse().map_err(|_| {
            ApiError::bad_request("invalid_plan", "plan: use free, creator, pro or enterprise")
        })?;
        let id = auth.user().account.id.clone();
        if let Some(billing) = state.billing.as_ref().filter(|_| paid(plan)) {
            // The paid plan of a subscription set to end: keep it.
            if billing.keep_plan(state.engine.desk(), &id, plan).await? {
                return Ok(Json(PlanSelected {
                    status: OkStatus::ok(),
                    plan: plan.as_str().into(),
                    changes_at: None,
                }));
            }
        }
        if let (clipforge_actors::accounts::Plan::Free, Some(billing)) = (plan, &state.billing) {
            let chosen = billing.select_free(state.engine.desk(), &id).await?;
            return Ok(Json(PlanSelected {
                status: OkStatus::ok(),
                plan: chosen.plan.as_str().into(),
                changes_at: chosen.changes_at.map(DateTime::from),
            }));
        }
        account(
            state
                .engine
                .call_account(&id, |reply| AccountMsg::SelectPlan { plan, reply })
                .await,
        )?;
        Ok(Json(PlanSelected {
            status: OkStatus::ok(),
            plan: plan.as_str().into(),
            changes_at: None,
        }))
    }

    /// Where the credits went (newest first): `{entries, total, page, limit}`.
    #[oai(path = "/ledger", method = "get", operation_id = "creditLedger")]
    async fn ledger(
        &self,
        state: Data<&State>,
        auth: Auth,
        page: Query<Option<i64>>,
        limit: Query<Option<i64>>,
    ) -> ApiResult<Json<LedgerPage>> {
        let (page, limit) = paging(page.0, limit.0);
        let id = auth.user().account.id.clone();
        let ledger = account(
            state
                .engine
                .call_account(&id, |reply| AccountMsg::Ledger {
                    page: page as u64,
                    limit: limit as u64,
                    reply,
                })
                .await,
        )?;
        // The titles of the projects the page names (a deleted project's
        // entries keep only its id).
        let mut titles = std::collections::HashMap::new();
        let user = &auth.user().account.id;
        for pid in ledger.entries.iter().filter_map(|e| e.project_id.as_ref()) {
            if titles.contains_key(pid) {
                continue;
            }
            match state.projects.project(user, pid).await {
                Ok(p) => {
                    titles.insert(pid.clone(), p.title);
                }
                Err(ProjectError::NotFound(_)) => {}
                Err(e) => return Err(super::projects::project_error(e)),
            }
        }
        Ok(Json(ledger_page(ledger, &titles)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use poem_openapi::types::ToJSON;

    #[test]
    fn the_written_balance_is_the_documented_one() {
        let mut b = Balance::example();
        assert_eq!(
            serde_json::to_value(BalanceBody::from(&b)).unwrap(),
            b.to_json().unwrap()
        );
        b.plan_ends_at = Some("2026-06-01T00:00:00.000Z".into());
        assert_eq!(
            serde_json::to_value(BalanceBody::from(&b)).unwrap(),
            b.to_json().unwrap()
        );
    }
}
