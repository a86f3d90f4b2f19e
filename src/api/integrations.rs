//! Integrations (DESIGN.md 2): connect TikTok, Instagram and YouTube
//! accounts with OAuth 2.0, list and disconnect them.

use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::types::ParseFromJSON;
use poem_openapi::{Object, OpenApi, Tags};
use serde_json::Value;

use super::formats::{DateTime, Provider as ProviderName, Text, Uri};
use super::{ApiError, ApiResult, Auth, State};
use clipforge_actors::posts::{Provider, PublishError};

#[derive(Tags)]
enum Tag {
    /// Connected platform accounts.
    Integrations,
}

pub struct IntegrationsApi;

/// A connected platform account (its tokens are never shown).
#[derive(Object)]
#[oai(rename_all = "camelCase")]
struct Integration {
    provider: ProviderName,
    /// The platform's id of the account (or channel).
    account_id: Text,
    account_name: Text,
    /// Scopes granted.
    scope: Text,
    connected_at: DateTime,
    /// When the access token expires (it is refreshed before use).
    expires_at: DateTime,
    refreshed_at: DateTime,
    /// Usable now, or can be made usable by a refresh.
    active: bool,
}

#[derive(Object)]
struct IntegrationList {
    integrations: Vec<Integration>,
    /// The platforms this server can connect (their OAuth client is
    /// configured); connecting another answers 503
    /// `provider_not_configured`.
    available: Vec<ProviderName>,
}

/// Where to send the user to give consent.
#[derive(Object)]
#[oai(rename_all = "camelCase")]
struct ConnectStart {
    provider: ProviderName,
    authorize_url: Uri,
    /// Single use, bound to the caller, valid 10 minutes.
    state: Text,
    redirect_uri: Uri,
    expires_at: DateTime,
}

#[derive(Object)]
struct Connected {
    /// Always `connected`.
    status: Text,
    integration: Integration,
}

#[derive(Object)]
#[oai(rename_all = "camelCase")]
struct Disconnected {
    provider: ProviderName,
    /// Always true.
    disconnected: bool,
    /// Pending posts to this platform, now failed.
    failed_posts: u64,
}

fn provider(s: &str) -> ApiResult<Provider> {
    Provider::parse(s).ok_or_else(|| ApiError::not_found("provider"))
}

/// The engine's JSON view as the documented object (a mismatch is a bug: 500).
fn typed<T: ParseFromJSON>(v: Value) -> ApiResult<T> {
    T::parse_from_json(Some(v))
        .map_err(|e| ApiError::internal("integration view", e.into_message()))
}

#[OpenApi(prefix_path = "/integrations", tag = "Tag::Integrations")]
impl IntegrationsApi {
    /// Connected accounts: `{integrations: [{provider, accountId, accountName, expiresAt, active, …}], available: [provider, …]}`.
    #[oai(path = "/", method = "get", operation_id = "listIntegrations")]
    async fn list(&self, state: Data<&State>, auth: Auth) -> ApiResult<Json<IntegrationList>> {
        let list = state
            .publishing
            .list_integrations(&auth.user().account.id)
            .await?;
        let integrations = list.into_iter().map(typed).collect::<ApiResult<_>>()?;
        let available = state
            .publishing
            .available_providers()
            .into_iter()
            .map(|p| ProviderName::from(p.as_str()))
            .collect();
        Ok(Json(IntegrationList {
            integrations,
            available,
        }))
    }

    /// Start connecting: `{authorizeUrl, state, redirectUri, expiresAt}`. Send
    /// the user to `authorizeUrl`; the platform returns to the callback. The
    /// `state` is single use, bound to the caller, valid 10 minutes (YouTube
    /// also uses PKCE). 503 when the platform's app is not configured.
    #[oai(
        path = "/:provider/connect",
        method = "post",
        operation_id = "connectIntegration"
    )]
    async fn connect(
        &self,
        state: Data<&State>,
        auth: Auth,
        provider: Path<ProviderName>,
    ) -> ApiResult<Json<ConnectStart>> {
        let p = self::provider(&provider.0)?;
        Ok(Json(typed(
            state
                .publishing
                .connect(&auth.user().account.id, &auth.user().token, p)
                .await?,
        )?))
    }

    /// The platform's redirect after consent (`code`, `state`, or `error`):
    /// exchanges the code and stores the tokens encrypted. It must come with
    /// the session (cookie or bearer) that started the flow: 403
    /// `oauth_session_mismatch` otherwise; an unknown, used or expired
    /// `state` is 400.
    #[oai(
        path = "/:provider/callback",
        method = "get",
        operation_id = "integrationCallback"
    )]
    async fn callback(
        &self,
        state: Data<&State>,
        req: &poem::Request,
        provider: Path<ProviderName>,
        /// The authorization code (absent when consent was refused).
        code: Query<Option<String>>,
        /// The `state` returned by connect.
        #[oai(name = "state", validator(min_length = 1))]
        oauth_state: Query<String>,
        /// Set by the platform when consent was refused.
        error: Query<Option<String>>,
    ) -> ApiResult<Json<Connected>> {
        let p = self::provider(&provider.0)?;
        let caller = crate::session::session_of(&state.engine, req).await;
        let view = state
            .publishing
            .callback(
                p,
                caller.as_ref().map(|(u, t)| (u.as_str(), t.as_str())),
                code.0.as_deref(),
                Some(oauth_state.0.as_str()),
                error.0.as_deref(),
            )
            .await?;
        Ok(Json(Connected {
            status: "connected".into(),
            integration: typed(view)?,
        }))
    }

    /// Disconnect: the account's tokens are deleted and its pending posts fail
    /// with the reason. `{provider, disconnected: true, failedPosts}`.
    #[oai(
        path = "/:provider",
        method = "delete",
        operation_id = "disconnectIntegration"
    )]
    async fn disconnect(
        &self,
        state: Data<&State>,
        auth: Auth,
        provider: Path<ProviderName>,
    ) -> ApiResult<Json<Disconnected>> {
        let p = self::provider(&provider.0)?;
        let failed = state
            .publishing
            .disconnect(&auth.user().account.id, p)
            .await
            .map_err(|e| match e {
                PublishError::NotFound(_) => ApiError::not_found("integration"),
                other => other.into(),
            })?;
        Ok(Json(Disconnected {
            provider: p.as_str().into(),
            disconnected: true,
            failed_posts: failed as u64,
        }))
    }
}
