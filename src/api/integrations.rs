//! Integrations (DESIGN.md 2): connect TikTok, Instagram and YouTube
//! accounts with OAuth 2.0, list and disconnect them.

use poem::web::Data;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Json;
use poem_openapi::{OpenApi, Tags};
use serde_json::{json, Value};

use super::{ApiError, ApiResult, Auth, State};
use clipforge_actors::publish::{Provider, PublishError};

#[derive(Tags)]
enum Tag {
    /// Connected platform accounts.
    Integrations,
}

pub struct IntegrationsApi;

fn provider(s: &str) -> ApiResult<Provider> {
    Provider::parse(s).ok_or_else(|| ApiError::not_found("provider"))
}

#[OpenApi(prefix_path = "/integrations", tag = "Tag::Integrations")]
impl IntegrationsApi {
    /// Connected accounts: `{integrations: [{provider, accountId, accountName, expiresAt, active, …}]}`.
    #[oai(path = "/", method = "get")]
    async fn list(&self, state: Data<&State>, auth: Auth) -> ApiResult<Json<Value>> {
        let list = state
            .publishing
            .list_integrations(&auth.user().account.id)
            .await?;
        Ok(Json(json!({ "integrations": list })))
    }

    /// Start connecting: `{authorizeUrl, state, redirectUri, expiresAt}`. Send
    /// the user to `authorizeUrl`; the platform returns to the callback. The
    /// `state` is single use, bound to the caller, valid 10 minutes (YouTube
    /// also uses PKCE).
    #[oai(path = "/:provider/connect", method = "post")]
    async fn connect(
        &self,
        state: Data<&State>,
        auth: Auth,
        provider: Path<String>,
    ) -> ApiResult<Json<Value>> {
        let p = self::provider(&provider.0)?;
        Ok(Json(
            state
                .publishing
                .connect(&auth.user().account.id, &auth.user().token, p)
                .await?,
        ))
    }

    /// The platform's redirect after consent (`code`, `state`, or `error`):
    /// exchanges the code and stores the tokens encrypted. It must come with
    /// the session (cookie or bearer) that started the flow: 403
    /// `oauth_session_mismatch` otherwise.
    #[oai(path = "/:provider/callback", method = "get")]
    async fn callback(
        &self,
        state: Data<&State>,
        req: &poem::Request,
        provider: Path<String>,
        code: Query<Option<String>>,
        #[oai(name = "state")] oauth_state: Query<Option<String>>,
        error: Query<Option<String>>,
    ) -> ApiResult<Json<Value>> {
        let p = self::provider(&provider.0)?;
        let caller = crate::security::session_of(&state, req);
        let view = state
            .publishing
            .callback(
                p,
                caller.as_ref().map(|(u, t)| (u.as_str(), t.as_str())),
                code.0.as_deref(),
                oauth_state.0.as_deref(),
                error.0.as_deref(),
            )
            .await?;
        Ok(Json(json!({ "status": "connected", "integration": view })))
    }

    /// Disconnect: the account's tokens are deleted and its pending posts fail
    /// with the reason. `{provider, disconnected: true, failedPosts}`.
    #[oai(path = "/:provider", method = "delete")]
    async fn disconnect(
        &self,
        state: Data<&State>,
        auth: Auth,
        provider: Path<String>,
    ) -> ApiResult<Json<Value>> {
        let p = self::provider(&provider.0)?;
        let failed = state
            .publishing
            .disconnect(&auth.user().account.id, p)
            .await
            .map_err(|e| match e {
                PublishError::NotFound(_) => ApiError::not_found("integration"),
                other => other.into(),
            })?;
        Ok(Json(
            json!({ "provider": p.as_str(), "disconnected": true, "failedPosts": failed }),
        ))
    }
}
