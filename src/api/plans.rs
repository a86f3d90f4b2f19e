//! The plans and what they cost (issue 30): `GET /api/plans`, public, from
//! the plan table the server enforces (credits, upload and storage limits,
//! the forced watermark) and the prices Stripe holds for the paid plans
//! (`billing::prices`; none when billing is not configured).

use poem::web::Data;
use poem_openapi::payload::Json;
use poem_openapi::types::Example;
use poem_openapi::{Object, OpenApi};

use super::credits::Tag;
use super::formats::{Frequency, Plan};
use super::{ApiResult, State};
use clipforge_actors::accounts::Plan as PlanId;

pub struct PlansApi;

/// What a plan costs at one billing frequency.
#[derive(Object)]
#[oai(rename_all = "camelCase")]
struct PlanPrice {
    frequency: Frequency,
    /// In the currency's smallest unit (cents for `usd`).
    amount: i64,
    /// ISO 4217, lower case (`usd`).
    currency: String,
}

/// A plan as the server enforces it.
#[derive(Object)]
#[oai(rename_all = "camelCase")]
struct PlanInfo {
    id: Plan,
    /// Credits of each 30-day cycle; `null` when unlimited.
    #[oai(nullable)]
    monthly_credits: Option<u64>,
    /// Credits added once, to the first cycle on the plan.
    welcome_bonus: u64,
    /// Largest accepted upload, in bytes.
    upload_max_bytes: u64,
    /// Storage quota for uploaded files, in bytes.
    storage_bytes: u64,
    /// Captions always carry the watermark on this plan.
    watermark: bool,
    /// Bought through Stripe Checkout (`creator`, `pro`), or free; the
    /// enterprise plan is arranged with sales.
    self_service: bool,
    /// Its Stripe prices (empty for free and enterprise, and when billing
    /// is not configured or Stripe could not be read).
    prices: Vec<PlanPrice>,
}

/// Every plan, in order of size.
#[derive(Object)]
#[oai(rename_all = "camelCase", example)]
struct PlanList {
    plans: Vec<PlanInfo>,
    /// A project costs one credit per started this many seconds of video.
    seconds_per_credit: u32,
}

impl Example for PlanList {
    fn example() -> Self {
        PlanList {
            plans: vec![PlanInfo {
                id: "creator".into(),
                monthly_credits: Some(600),
                welcome_bonus: 0,
                upload_max_bytes: 2_147_483_648,
                storage_bytes: 53_687_091_200,
                watermark: false,
                self_service: true,
                prices: vec![PlanPrice {
                    frequency: "monthly".into(),
                    amount: 1900,
                    currency: "usd".into(),
                }],
            }],
            seconds_per_credit: 60,
        }
    }
}

#[OpenApi(prefix_path = "/plans", tag = "Tag::Credits")]
impl PlansApi {
    /// The plans: credits per cycle, upload and storage limits, the
    /// watermark rule, and the paid plans' prices. No sign-in needed.
    #[oai(path = "/", method = "get", operation_id = "listPlans")]
    async fn list(&self, state: Data<&State>) -> ApiResult<Json<PlanList>> {
        let prices = match &state.billing {
            Some(billing) => billing.plan_prices().await,
            None => Default::default(),
        };
        let table = state.engine.accounts().plans();
        let plans = PlanId::ALL
            .into_iter()
            .map(|plan| {
                let limits = table.get(plan);
                PlanInfo {
                    id: plan.as_str().into(),
                    monthly_credits: limits.monthly_credits,
                    welcome_bonus: limits.welcome_bonus,
                    upload_max_bytes: limits.upload_max_bytes,
                    storage_bytes: limits.storage_bytes,
                    watermark: limits.watermark_forced,
                    self_service: plan != PlanId::Enterprise,
                    prices: prices
                        .iter()
                        .filter(|p| p.plan == plan)
                        .map(|p| PlanPrice {
                            frequency: p.frequency.as_str().into(),
                            amount: p.amount,
                            currency: p.currency.clone(),
                        })
                        .collect(),
                }
            })
            .collect();
        Ok(Json(PlanList {
            plans,
            seconds_per_credit: clipforge_actors::accounts::SECONDS_PER_CREDIT,
        }))
    }
}
