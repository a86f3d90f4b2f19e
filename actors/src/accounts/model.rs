//! Plans, accounts and sessions: the stored records and their API views.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::clock::iso8601;
use super::error::AccountError;
use crate::captions::template::CaptionStyle;

const MIB: u64 = 1024 * 1024;
const GIB: u64 = 1024 * MIB;
const TIB: u64 = 1024 * GIB;

/// A subscription plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Plan {
    Free,
    Creator,
    Pro,
    Enterprise,
}

impl Plan {
    pub const ALL: [Plan; 4] = [Plan::Free, Plan::Creator, Plan::Pro, Plan::Enterprise];

    /// The contract's name of the plan.
    pub fn as_str(self) -> &'static str {
        match self {
            Plan::Free => "free",
            Plan::Creator => "creator",
            Plan::Pro => "pro",
            Plan::Enterprise => "enterprise",
        }
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Plan {
    type Err = AccountError;

    /// Parses a plan name (trimmed, case-insensitive).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let name = s.trim();
        Plan::ALL
            .into_iter()
            .find(|plan| plan.as_str().eq_ignore_ascii_case(name))
            .ok_or_else(|| {
                AccountError::InvalidInput(
                    "plan: must be one of free, creator, pro, enterprise".to_string(),
                )
            })
    }
}

/// What a plan allows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanLimits {
    /// Largest accepted upload.
    pub upload_max_bytes: u64,
    /// Storage quota for uploaded files.
    pub storage_bytes: u64,
    /// Captions always carry the watermark, whatever the template says.
    pub watermark_forced: bool,
    /// Credits of each cycle; `None` means unlimited.
    pub monthly_credits: Option<u64>,
    /// Credits added once, to the first cycle on this plan.
    pub welcome_bonus: u64,
}

impl PlanLimits {
    pub fn unlimited_credits(&self) -> bool {
        self.monthly_credits.is_none()
    }

    /// `style` as it must be rendered on this plan: where the plan forces
    /// the watermark (contract 4.5 rule 4) it is switched on and kept
    /// visible, its opacity and size raised to at least
    /// [`FORCED_WATERMARK_MIN_OPACITY`] and [`FORCED_WATERMARK_MIN_SIZE`]
    /// (clamped, as template values are; its colours are fixed).
    pub fn enforce(&self, mut style: CaptionStyle) -> CaptionStyle {
        if self.watermark_forced {
            style.watermark_enabled = true;
            style.watermark_opacity = style.watermark_opacity.max(FORCED_WATERMARK_MIN_OPACITY);
            style.watermark_size = style.watermark_size.max(FORCED_WATERMARK_MIN_SIZE);
        }
        style
    }
}

/// Least opacity (0–1) of a watermark a plan forces.
pub const FORCED_WATERMARK_MIN_OPACITY: f64 = 0.5;
/// Least size (% of the frame's width) of a watermark a plan forces.
pub const FORCED_WATERMARK_MIN_SIZE: f64 = 12.0;

/// The limits of every plan. The defaults are DESIGN.md's, with sizes in
/// binary units (500 MB = 500 MiB).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanTable {
    pub free: PlanLimits,
    pub creator: PlanLimits,
    pub pro: PlanLimits,
    pub enterprise: PlanLimits,
}

impl Default for PlanTable {
    fn default() -> Self {
        Self {
            free: PlanLimits {
                upload_max_bytes: 500 * MIB,
                storage_bytes: 5 * GIB,
                watermark_forced: true,
                monthly_credits: Some(60),
                welcome_bonus: 0,
            },
            creator: PlanLimits {
                upload_max_bytes: 2 * GIB,
                storage_bytes: 50 * GIB,
                watermark_forced: false,
                monthly_credits: Some(300),
                welcome_bonus: 60,
            },
            pro: PlanLimits {
                upload_max_bytes: 5 * GIB,
                storage_bytes: 200 * GIB,
                watermark_forced: false,
                monthly_credits: Some(1000),
                welcome_bonus: 200,
            },
            enterprise: PlanLimits {
                upload_max_bytes: 10 * GIB,
                storage_bytes: TIB,
                watermark_forced: false,
                monthly_credits: None,
                welcome_bonus: 0,
            },
        }
    }
}

impl PlanTable {
    pub fn get(&self, plan: Plan) -> &PlanLimits {
        match plan {
            Plan::Free => &self.free,
            Plan::Creator => &self.creator,
            Plan::Pro => &self.pro,
            Plan::Enterprise => &self.enterprise,
        }
    }
}

/// An account as stored, with its secrets.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct StoredAccount {
    pub id: String,
    /// Normalised (trimmed, lower-case).
    pub email: String,
    pub name: String,
    /// Argon2id PHC string.
    pub password_hash: String,
    /// Object-store key of the avatar image.
    pub avatar_key: Option<String>,
    pub plan: Plan,
    /// Paid plans the account may select (granted by billing or operators).
    pub entitlements: Vec<Plan>,
    /// Plans whose welcome bonus the account has had.
    pub bonuses_granted: Vec<Plan>,
    /// The template with `isDefault` true; there is always exactly one.
    pub default_template_id: String,
    pub created_at: i64,
    pub updated_at: i64,
}
crate::record!(StoredAccount, "account", 1);

/// An account, without its secrets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Account {
    pub id: String,
    pub email: String,
    pub name: String,
    pub avatar_key: Option<String>,
    pub plan: Plan,
    pub entitlements: Vec<Plan>,
    pub default_template_id: String,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
}

impl From<&StoredAccount> for Account {
    fn from(stored: &StoredAccount) -> Self {
        Self {
            id: stored.id.clone(),
            email: stored.email.clone(),
            name: stored.name.clone(),
            avatar_key: stored.avatar_key.clone(),
            plan: stored.plan,
            entitlements: stored.entitlements.clone(),
            default_template_id: stored.default_template_id.clone(),
            created_at_ms: stored.created_at,
            updated_at_ms: stored.updated_at,
        }
    }
}

impl Account {
    /// The API form; `avatar_url` is where the HTTP layer serves the avatar.
    pub fn view(&self, avatar_url: Option<String>) -> AccountView {
        AccountView {
            id: self.id.clone(),
            email: self.email.clone(),
            name: self.name.clone(),
            image: avatar_url,
            plan: self.plan,
            created_at: iso8601(self.created_at_ms),
            updated_at: iso8601(self.updated_at_ms),
        }
    }
}

/// The user object of the auth routes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AccountView {
    pub id: String,
    pub email: String,
    pub name: String,
    /// Avatar URL.
    pub image: Option<String>,
    pub plan: Plan,
    pub created_at: String,
    pub updated_at: String,
}

/// A session as stored under the SHA-256 of its token.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct StoredSession {
    pub id: String,
    pub user_id: String,
    pub created_at: i64,
    pub expires_at: i64,
}
crate::record!(StoredSession, "session", 1);

/// The session object of `GET /api/auth/get-session` (never the token).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    pub id: String,
    pub user_id: String,
    pub created_at: String,
    pub expires_at: String,
}

impl From<&StoredSession> for SessionInfo {
    fn from(stored: &StoredSession) -> Self {
        Self {
            id: stored.id.clone(),
            user_id: stored.user_id.clone(),
            created_at: iso8601(stored.created_at),
            expires_at: iso8601(stored.expires_at),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_parse_and_print() {
        for plan in Plan::ALL {
            assert_eq!(plan.as_str().parse::<Plan>().expect("parse"), plan);
            assert_eq!(
                serde_json::to_string(&plan).expect("json"),
                format!("\"{plan}\"")
            );
        }
        assert_eq!(" PRO ".parse::<Plan>().expect("parse"), Plan::Pro);
        let err = "gold".parse::<Plan>().expect_err("unknown plan");
        assert!(err.to_string().starts_with("plan:"), "{err}");
    }

    #[test]
    fn default_table_matches_design() {
        let table = PlanTable::default();
        assert_eq!(table.free.monthly_credits, Some(60));
        assert!(table.free.watermark_forced);
        assert_eq!(table.creator.welcome_bonus, 60);
        assert_eq!(table.pro.monthly_credits, Some(1000));
        assert!(table.get(Plan::Enterprise).unlimited_credits());
        assert_eq!(table.enterprise.upload_max_bytes, 10 * GIB);
        let forced = table.free.enforce(CaptionStyle::default());
        assert!(forced.watermark_enabled);
        let hidden = CaptionStyle {
            watermark_opacity: 0.0,
            watermark_size: 1.0,
            ..CaptionStyle::default()
        };
        let forced = table.free.enforce(hidden.clone());
        assert_eq!(
            (forced.watermark_opacity, forced.watermark_size),
            (FORCED_WATERMARK_MIN_OPACITY, FORCED_WATERMARK_MIN_SIZE)
        );
        let kept = table.pro.enforce(hidden.clone());
        assert_eq!((kept.watermark_opacity, kept.watermark_size), (0.0, 1.0));
        assert!(!table.pro.enforce(CaptionStyle::default()).watermark_enabled);
    }
}
