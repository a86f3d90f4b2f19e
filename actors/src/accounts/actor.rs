//! `AccountActor`: one per active account, the account's single writer on
//! this node. It holds the account's state ([`HeldAccount`]: record,
//! credit state, version), loaded once from the store, and, once a
//! message needs them, its sessions, templates, notifications and storage
//! counter (`held_parts.rs`). It handles the typed [`AccountMsg`]s one at
//! a time through [`Accounts::acting_for`]: each is one atomic store
//! write (or two, for a charge and its notification), conditional on the
//! version held, and memory changes only after it succeeded. Reads are
//! answered from that memory ([`super::registry::UserRegistry::held`]). A
//! write refused as stale (the account was changed elsewhere: another node
//! owned it a moment ago) reloads the state and handles the message again.
//! Idle actors are passivated (stopped, their memory dropped) and
//! re-activated from the store on the next request
//! (`registry.rs`, which also sends the messages and waits for replies).

use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

use super::billing::{Activation, Applied, BillingFrequency, BillingRecord, SubscriptionUpdate};
use super::credits::{CreditBalance, LedgerPage};
use super::domain::Accounts;
use super::error::Result;
use super::held::{Held, HeldAccount};
use super::keys::{ApiKeyView, Scope};
use super::model::{Account, Plan};
use super::notifications::{Notification, NotificationKind, Said};
use super::templates::{TemplateInput, TemplateView};
use crate::captions::template::CaptionStyle;
use crate::mailbox::ActorMeta;
use crate::storage::kv::KvOp;
use crate::webhooks::Subject;

/// How many times a message meeting a newer version is handled again on
/// reloaded state before its conflict is returned.
const STALE_RETRIES: usize = 3;

/// Where an account actor's answer goes.
pub type Reply<T> = RpcReplyPort<Result<T>>;

/// A part of an account's state its actor loads when a read asks for it.
#[derive(Clone, Copy, Debug)]
pub enum Part {
    Sessions,
    Keys,
}

/// A notification written after a credit change.
#[derive(Clone, Debug)]
pub struct Notice {
    pub kind: NotificationKind,
    pub said: Said,
    pub subject: Option<Subject>,
}

/// A Stripe event (or the checkout's return path) applied to the account;
/// `event_id` makes a redelivered event a no-op.
#[derive(Clone, Debug)]
pub enum BillingChange {
    Activate(Activation),
    Update(SubscriptionUpdate),
    End {
        subscription_id: String,
    },
    Renew {
        subscription_id: String,
        period_start: i64,
        period_end: Option<i64>,
    },
    PaymentFailed {
        retry_at: Option<i64>,
    },
}

/// Records written in the same store write as a credit reservation, once
/// the caption style the account resolves for them is known (a new
/// project's records). A narrow trait, so the accounts domain does not
/// know what a project is.
pub trait Reserved: Send + Sync {
    fn ops(&self, style: &CaptionStyle) -> Result<Vec<KvOp>>;
}

/// Everything an account's actor does. The account is the actor's own
/// (sign-up and sign-in run in the actor of the email's account id).
pub enum AccountMsg {
    /// Load part of the state (nobody waits for it).
    Load(Part),
    /// The held state; `None` when the account does not exist.
    HeldState(Reply<Option<Arc<Held>>>),
    Get(Reply<Account>),
    Balance(Reply<CreditBalance>),
    Ledger {
        page: u64,
        limit: u64,
        reply: Reply<LedgerPage>,
    },
    StorageUsed(Reply<u64>),
    BillingRecord(Reply<BillingRecord>),
    Notifications(Reply<Vec<Notification>>),
    Templates(Reply<Vec<TemplateView>>),
    ApiKeys(Reply<Vec<ApiKeyView>>),
    /// The caption style a template spec resolves to, the plan's
    /// watermark forced.
    ResolveStyle {
        template: String,
        reply: Reply<CaptionStyle>,
    },
    SignUp {
        email: String,
        name: String,
        password_hash: String,
        reply: Reply<(Account, String)>,
    },
    SignIn {
        email: String,
        password: String,
        client: String,
        reply: Reply<(Account, String)>,
    },
    SignOut {
        token: String,
        reply: Reply<()>,
    },
    ChangePassword {
        token: String,
        current: String,
        new: String,
        revoke_others: bool,
        reply: Reply<()>,
    },
    UpdateProfile {
        name: String,
        reply: Reply<Account>,
    },
    /// Sets (or clears) the avatar; answers the previous object key.
    SetAvatar {
        key: Option<String>,
        reply: Reply<Option<String>>,
    },
    MarkAllRead(Reply<usize>),
    MarkRead {
        id: String,
        reply: Reply<()>,
    },
    CreateTemplate {
        input: TemplateInput,
        reply: Reply<TemplateView>,
    },
    UpdateTemplate {
        id: String,
        input: TemplateInput,
        reply: Reply<TemplateView>,
    },
    DeleteTemplate {
        id: String,
        reply: Reply<()>,
    },
    CreateApiKey {
        name: String,
        scopes: Vec<Scope>,
        reply: Reply<(ApiKeyView, String)>,
    },
    RevokeApiKey {
        id: String,
        reply: Reply<()>,
    },
    SelectPlan {
        plan: Plan,
        reply: Reply<CreditBalance>,
    },
    SetPlanByOperator {
        plan: Plan,
        reply: Reply<Plan>,
    },
    RememberCustomer {
        customer_id: String,
        reply: Reply<String>,
    },
    RecordCheckout {
        session_id: String,
        plan: Plan,
        frequency: BillingFrequency,
        reply: Reply<()>,
    },
    Billing {
        change: BillingChange,
        event_id: Option<String>,
        reply: Reply<Applied>,
    },
    /// Counts `bytes` against the storage quota, writing `with` (an
    /// upload's record) in the same write; answers the bytes used.
    AddStorage {
        bytes: u64,
        with: Vec<KvOp>,
        reply: Reply<u64>,
    },
    RemoveStorage {
        bytes: u64,
        with: Vec<KvOp>,
        reply: Reply<u64>,
    },
    /// Reserves `credits` for a project and writes its records with the
    /// caption style `template` resolves to; answers that style.
    Reserve {
        project_id: String,
        credits: u64,
        template: String,
        records: Box<dyn Reserved>,
        reply: Reply<CaptionStyle>,
    },
    Charge {
        project_id: String,
        minutes: u64,
        notice: Notice,
        reply: Reply<()>,
    },
    Release {
        project_id: String,
        notice: Option<Notice>,
        reply: Reply<()>,
    },
}

// Local only: with ractor's `cluster` feature, messages opt in explicitly.
impl ractor::Message for AccountMsg {}

pub struct AccountActor;

pub struct AccountState {
    /// Acting for this actor's account (reads it from `held`).
    accounts: Accounts,
    held: Arc<HeldAccount>,
    meta: Arc<ActorMeta>,
}

/// Runs `$body` for the account (`$a`: its [`Accounts`], `$u`: its id),
/// again on reloaded state after a stale write, at most [`STALE_RETRIES`]
/// times. A macro, not a function taking a closure: the body awaits the
/// store (an async block, so its `?` ends the body, not the handler).
macro_rules! run {
    ($s:expr, |$a:pat_param, $u:pat_param| $body:expr) => {{
        let s: &AccountState = $s;
        let user_id = s.held.user_id().to_string();
        let mut attempt = 1;
        loop {
            let out = {
                let $a = &s.accounts;
                let $u = user_id.as_str();
                async { $body }.await
            };
            if !s.held.take_stale() {
                break out;
            }
            // Loaded again by the next run (or the next message).
            s.held.unload();
            tracing::info!(user_id, attempt, "stale account state reloaded");
            if attempt == STALE_RETRIES {
                break out;
            }
            attempt += 1;
        }
    }};
}

/// Answers a caller (who may have stopped waiting).
fn answer<T>(reply: RpcReplyPort<T>, out: T) {
    let _ = reply.send(out);
}

impl Actor for AccountActor {
    type Msg = AccountMsg;
    type State = AccountState;
    type Arguments = (Arc<Accounts>, Arc<HeldAccount>, Arc<ActorMeta>);

    async fn pre_start(
        &self,
        _myself: ActorRef<AccountMsg>,
        (accounts, held, meta): (Arc<Accounts>, Arc<HeldAccount>, Arc<ActorMeta>),
    ) -> std::result::Result<AccountState, ActorProcessingErr> {
        Ok(AccountState {
            accounts: accounts.acting_for(held.clone()),
            held,
            meta,
        })
    }

    async fn handle(
        &self,
        _myself: ActorRef<AccountMsg>,
        msg: AccountMsg,
        s: &mut AccountState,
    ) -> std::result::Result<(), ActorProcessingErr> {
        s.meta.received();
        crate::faults::check(crate::faults::Point::Account);
        // Boxed: the state of the largest operation's future is allocated
        // while a message is handled, not kept in every live actor's task
        // (+7 KB per actor, 100,000 live: `make bench-api`).
        Box::pin(handle(s, msg)).await;
        Ok(())
    }
}

async fn handle(s: &AccountState, msg: AccountMsg) {
    use AccountMsg as M;
    match msg {
        M::Load(part) => {
            let loaded = run!(s, |a, _| match part {
                Part::Sessions => a.load_held_sessions().await,
                Part::Keys => a.load_held_keys().await,
            });
            if let Err(e) = loaded {
                tracing::warn!(error = %e, "loading a part of an account's state");
            }
        }
        M::HeldState(r) => answer(r, run!(s, |a, _| a.held_state().await)),
        M::Get(r) => answer(r, run!(s, |a, u| a.get_account(u).await)),
        M::Balance(r) => answer(r, run!(s, |a, u| a.balance(u).await)),
        M::Ledger { page, limit, reply } => {
            answer(reply, run!(s, |a, u| a.ledger(u, page, limit).await))
        }
        M::StorageUsed(r) => answer(r, run!(s, |a, u| a.storage_used(u).await)),
        M::BillingRecord(r) => answer(r, run!(s, |a, u| a.billing_record(u).await)),
        M::Notifications(r) => answer(r, run!(s, |a, u| a.notifications(u).await)),
        M::Templates(r) => answer(r, run!(s, |a, u| a.list_templates(u).await)),
        M::ApiKeys(r) => answer(r, run!(s, |a, u| a.list_api_keys(u).await)),
        M::ResolveStyle { template, reply } => {
            answer(reply, run!(s, |a, u| a.styled(u, &template).await))
        }
        M::SignUp {
            email,
            name,
            password_hash,
            reply,
        } => answer(
            reply,
            run!(s, |a, _| a
                .sign_up_hashed(&email, name.clone(), password_hash.clone())
                .await),
        ),
        M::SignIn {
            email,
            password,
            client,
            reply,
        } => answer(
            reply,
            run!(s, |a, _| a
                .sign_in_counted(&email, &password, &client)
                .await),
        ),
        M::SignOut { token, reply } => answer(reply, run!(s, |a, _| a.sign_out(&token).await)),
        M::ChangePassword {
            token,
            current,
            new,
            revoke_others,
            reply,
        } => answer(
            reply,
            run!(s, |a, u| a
                .change_password(u, &token, &current, &new, revoke_others)
                .await),
        ),
        M::UpdateProfile { name, reply } => {
            answer(reply, run!(s, |a, u| a.update_profile(u, &name).await))
        }
        M::SetAvatar { key, reply } => {
            answer(reply, run!(s, |a, u| a.set_avatar(u, key.clone()).await))
        }
        M::MarkAllRead(r) => answer(r, run!(s, |a, u| a.mark_all_read(u).await)),
        M::MarkRead { id, reply } => answer(reply, run!(s, |a, u| a.mark_read(u, &id).await)),
        M::CreateTemplate { input, reply } => {
            answer(reply, run!(s, |a, u| a.create_template(u, &input).await))
        }
        M::UpdateTemplate { id, input, reply } => answer(
            reply,
            run!(s, |a, u| a.update_template(u, &id, &input).await),
        ),
        M::DeleteTemplate { id, reply } => {
            answer(reply, run!(s, |a, u| a.delete_template(u, &id).await))
        }
        M::CreateApiKey {
            name,
            scopes,
            reply,
        } => answer(
            reply,
            run!(s, |a, u| a.create_api_key(u, &name, &scopes).await),
        ),
        M::RevokeApiKey { id, reply } => {
            answer(reply, run!(s, |a, u| a.revoke_api_key(u, &id).await))
        }
        M::SelectPlan { plan, reply } => {
            answer(reply, run!(s, |a, u| a.select_plan(u, plan).await))
        }
        M::SetPlanByOperator { plan, reply } => {
            answer(reply, run!(s, |a, u| a.set_plan_by_operator(u, plan).await))
        }
        M::RememberCustomer { customer_id, reply } => answer(
            reply,
            run!(s, |a, u| a.remember_customer(u, &customer_id).await),
        ),
        M::RecordCheckout {
            session_id,
            plan,
            frequency,
            reply,
        } => answer(
            reply,
            run!(s, |a, u| a
                .record_checkout(u, &session_id, plan, frequency)
                .await),
        ),
        M::Billing {
            change,
            event_id,
            reply,
        } => answer(
            reply,
            run!(s, |a, u| billing(a, u, &change, event_id.as_deref()).await),
        ),
        M::AddStorage { bytes, with, reply } => answer(
            reply,
            run!(s, |a, u| a.add_storage_with(u, bytes, with.clone()).await),
        ),
        M::RemoveStorage { bytes, with, reply } => answer(
            reply,
            run!(s, |a, u| a
                .remove_storage_with(u, bytes, with.clone())
                .await),
        ),
        M::Reserve {
            project_id,
            credits,
            template,
            records,
            reply,
        } => answer(
            reply,
            run!(s, |a, u| {
                let style = a.styled(u, &template).await?;
                a.reserve_with(u, &project_id, credits, records.ops(&style)?)
                    .await?;
                Ok(style)
            }),
        ),
        M::Charge {
            project_id,
            minutes,
            notice,
            reply,
        } => answer(
            reply,
            run!(s, |a, u| {
                a.charge(u, &project_id, minutes).await?;
                notify(a, u, Some(&notice)).await
            }),
        ),
        M::Release {
            project_id,
            notice,
            reply,
        } => answer(
            reply,
            run!(s, |a, u| {
                a.release(u, &project_id).await?;
                notify(a, u, notice.as_ref()).await
            }),
        ),
    }
}

async fn billing(
    a: &Accounts,
    u: &str,
    change: &BillingChange,
    event: Option<&str>,
) -> Result<Applied> {
    match change {
        BillingChange::Activate(activation) => a.activate_subscription(u, activation, event).await,
        BillingChange::Update(update) => a.update_subscription(u, update, event).await,
        BillingChange::End { subscription_id } => {
            a.end_subscription(u, subscription_id, event).await
        }
        BillingChange::Renew {
            subscription_id,
            period_start,
            period_end,
        } => {
            a.renew_paid_cycle(u, subscription_id, *period_start, *period_end, event)
                .await
        }
        BillingChange::PaymentFailed { retry_at } => a.payment_failed(u, *retry_at, event).await,
    }
}

async fn notify(a: &Accounts, u: &str, notice: Option<&Notice>) -> Result<()> {
    if let Some(n) = notice {
        a.notify(u, n.kind, &n.said, n.subject.as_ref()).await?;
    }
    Ok(())
}
