//! Accounts: sign-up, sign-in, sign-out, session, password change (the shape
//! of the auth library the contract's frontend uses), profile and avatar.

use clipforge_actors::tasks::blocking_caught;
use poem::Request;
use poem_openapi::payload::Json;
use poem_openapi::types::multipart::Upload;
use poem_openapi::types::Example;
use poem_openapi::{ApiResponse, Multipart, Object, OpenApi, Tags};

use clipforge_actors::accounts::actor::AccountMsg;
use clipforge_actors::accounts::{account_id_for_email, NewAccount};

use super::formats::{DateTime, Email, OkStatus, Plan, Text, Uri, Uuid};
use super::{account, ApiError, ApiResult, Auth, State, SESSION_COOKIE};

#[derive(Tags)]
enum Tag {
    /// Accounts, sessions and profile.
    Auth,
}

pub struct AuthApi;

#[derive(Object)]
#[oai(example)]
struct SignUp {
    /// Unique per account (compared in lower case).
    #[oai(validator(max_length = 254))]
    email: Email,
    /// 8 to 128 characters.
    #[oai(validator(min_length = 8, max_length = 128))]
    password: Text,
    #[oai(validator(
        min_length = 1,
        max_length = 100,
        pattern = r"^[^\x00-\x1F\x7F-\x9F\u202A-\u202E\u2066-\u2069]*[^\s\x00-\x1F\x7F-\x9F\u202A-\u202E\u2066-\u2069][^\x00-\x1F\x7F-\x9F\u202A-\u202E\u2066-\u2069]*$"
    ))]
    name: Text,
}

#[derive(Object)]
#[oai(example)]
struct SignIn {
    email: Email,
    password: Text,
}

impl Example for SignUp {
    fn example() -> Self {
        SignUp {
            email: "ana@example.com".into(),
            password: "correct horse battery".into(),
            name: "Ana".into(),
        }
    }
}

impl Example for SignIn {
    fn example() -> Self {
        SignIn {
            email: "ana@example.com".into(),
            password: "correct horse battery".into(),
        }
    }
}

#[derive(Object)]
#[oai(rename_all = "camelCase")]
struct ChangePassword {
    /// 8 to 128 characters.
    #[oai(validator(min_length = 8, max_length = 128))]
    new_password: Text,
    current_password: Text,
    /// Ends every other session of the account (default true).
    revoke_other_sessions: Option<bool>,
}

/// The signed-in user.
#[derive(Object, Clone)]
#[oai(rename_all = "camelCase", example)]
pub struct UserView {
    id: Uuid,
    email: Email,
    name: Text,
    /// Signed, expiring URL of the avatar; `null` without one.
    #[oai(nullable)]
    image: Option<Uri>,
    plan: Plan,
    created_at: DateTime,
}

impl Example for UserView {
    fn example() -> Self {
        UserView {
            id: "7d9f0c1e-3b7a-4e43-9a4e-0f6b2f1d8a11".into(),
            email: "ana@example.com".into(),
            name: "Ana".into(),
            image: None,
            plan: "free".into(),
            created_at: "2026-05-01T18:00:00.000Z".into(),
        }
    }
}

/// A new session: the token to send as `Authorization: Bearer <token>`.
#[derive(Object)]
struct SessionView {
    token: Text,
    user: UserView,
}

#[derive(Object)]
#[oai(rename_all = "camelCase")]
struct SessionInfoView {
    user: UserView,
    session: SessionMeta,
}

#[derive(Object)]
#[oai(rename_all = "camelCase")]
struct SessionMeta {
    expires_at: DateTime,
}

/// `{"status": "ok"}`.
#[derive(Object)]
pub struct Status {
    status: OkStatus,
}

#[derive(Object)]
#[oai(rename_all = "camelCase")]
struct AvatarStatus {
    status: OkStatus,
    /// Signed, expiring URL of the new avatar.
    avatar_url: Uri,
}

#[derive(Object)]
#[oai(example)]
struct Profile {
    #[oai(validator(
        min_length = 1,
        max_length = 100,
        pattern = r"^[^\x00-\x1F\x7F-\x9F\u202A-\u202E\u2066-\u2069]*[^\s\x00-\x1F\x7F-\x9F\u202A-\u202E\u2066-\u2069][^\x00-\x1F\x7F-\x9F\u202A-\u202E\u2066-\u2069]*$"
    ))]
    name: Text,
}

impl Example for Profile {
    fn example() -> Self {
        Profile {
            name: "Ana Souza".into(),
        }
    }
}

#[derive(Multipart)]
struct AvatarForm {
    /// PNG, JPEG or WebP, at most 5 MB.
    file: Upload,
}

#[derive(ApiResponse)]
enum SessionResponse {
    /// Signed in; the token is also set as the `clipforge.session_token` cookie.
    #[oai(status = 200)]
    Ok(Json<SessionView>, #[oai(header = "Set-Cookie")] String),
}

#[derive(ApiResponse)]
enum SignedOut {
    /// Signed out; the cookie is cleared.
    #[oai(status = 200)]
    Ok(Json<Status>, #[oai(header = "Set-Cookie")] String),
}

fn cookie(token: &str, max_age: i64) -> String {
    format!("{SESSION_COOKIE}={token}; Path=/; HttpOnly; SameSite=Lax; Max-Age={max_age}")
}

pub fn ok() -> Json<Status> {
    Json(Status {
        status: OkStatus::ok(),
    })
}

pub async fn avatar_url(state: &State, key: &Option<String>) -> Option<String> {
    match key {
        Some(k) => state
            .objects
            .url(
                k,
                std::time::Duration::from_secs(state.config.storage.url_ttl_secs),
            )
            .await
            .ok(),
        None => None,
    }
}

pub async fn user_view(state: &State, a: &clipforge_actors::accounts::Account) -> UserView {
    UserView {
        id: a.id.clone().into(),
        email: a.email.clone().into(),
        name: a.name.clone().into(),
        image: avatar_url(state, &a.avatar_key).await.map(Uri),
        plan: a.plan.as_str().into(),
        created_at: clipforge_actors::projects::records::iso8601(a.created_at_ms).into(),
    }
}

/// Avatar decodes running at once (each may hold up to 64 MB).
static AVATAR_DECODES: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(2);

/// Most avatar bytes accepted.
const AVATAR_MAX: usize = 5 * 1024 * 1024;

#[OpenApi(prefix_path = "/auth", tag = "Tag::Auth")]
impl AuthApi {
    /// Create an account and sign in.
    #[oai(path = "/sign-up/email", method = "post", operation_id = "signUpEmail")]
    async fn sign_up(
        &self,
        state: poem::web::Data<&State>,
        body: Json<SignUp>,
    ) -> ApiResult<SessionResponse> {
        let b = body.0;
        // The password is hashed (slow) before the account's actor writes.
        let new =
            blocking_caught(move || NewAccount::prepare(&b.email, &b.password, &b.name)).await;
        let new = account(new.map_err(|e| ApiError::internal("hashing a password", e))?)?;
        let (acc, token) = account(
            state
                .engine
                .call_account(&new.account_id(), |reply| AccountMsg::SignUp {
                    email: new.email,
                    name: new.name,
                    password_hash: new.password_hash,
                    reply,
                })
                .await,
        )?;
        let user = user_view(&state, &acc).await;
        Ok(SessionResponse::Ok(
            Json(SessionView {
                token: token.clone().into(),
                user,
            }),
            cookie(&token, 30 * 86_400),
        ))
    }

    /// Sign in with email and password.
    #[oai(path = "/sign-in/email", method = "post", operation_id = "signInEmail")]
    async fn sign_in(
        &self,
        state: poem::web::Data<&State>,
        req: &Request,
        body: Json<SignIn>,
    ) -> ApiResult<SessionResponse> {
        // Resolved on entry (trusted proxies' X-Forwarded-For), kept
        // across the cluster relay; an IPv6 client counts by its /64.
        let client = crate::security::client_ip(req)
            .map(|ip| crate::ratelimit::rate_key(ip).to_string())
            .unwrap_or_default();
        let b = body.0;
        // Counted (and refused beyond the limits) before it reaches the
        // account's actor, which checks the password and opens the session.
        let email = account(state.engine.accounts().sign_in_attempt(&b.email, &client))?;
        let (acc, token) = account(
            state
                .engine
                .call_account(&account_id_for_email(&email), |reply| AccountMsg::SignIn {
                    email,
                    password: b.password.0,
                    client,
                    reply,
                })
                .await,
        )?;
        let user = user_view(&state, &acc).await;
        Ok(SessionResponse::Ok(
            Json(SessionView {
                token: token.clone().into(),
                user,
            }),
            cookie(&token, 30 * 86_400),
        ))
    }

    /// End this session.
    #[oai(path = "/sign-out", method = "post", operation_id = "signOut")]
    async fn sign_out(&self, state: poem::web::Data<&State>, auth: Auth) -> ApiResult<SignedOut> {
        let user = auth.user();
        let token = user.token.clone();
        // In the account's actor: its memory forgets the session in the
        // same commit as the store.
        account(
            state
                .engine
                .call_account(&user.account.id, |reply| AccountMsg::SignOut {
                    token,
                    reply,
                })
                .await,
        )?;
        Ok(SignedOut::Ok(ok(), cookie("", 0)))
    }

    /// The signed-in user and session.
    #[oai(path = "/get-session", method = "get", operation_id = "getSession")]
    async fn get_session(
        &self,
        state: poem::web::Data<&State>,
        auth: Auth,
    ) -> ApiResult<Json<SessionInfoView>> {
        // The session was looked up when the request was authenticated.
        let acc = &auth.user().account;
        // Keys are refused here before the handler (`scopes.rs`).
        let info = auth.user().session().ok_or_else(ApiError::unauthorized)?;
        Ok(Json(SessionInfoView {
            user: user_view(&state, acc).await,
            session: SessionMeta {
                expires_at: info.expires_at.clone().into(),
            },
        }))
    }

    /// Change the password; `revokeOtherSessions` (default true) ends every other session.
    #[oai(
        path = "/change-password",
        method = "post",
        operation_id = "changePassword"
    )]
    async fn change_password(
        &self,
        state: poem::web::Data<&State>,
        auth: Auth,
        body: Json<ChangePassword>,
    ) -> ApiResult<Json<Status>> {
        let user = auth.user().clone();
        let b = body.0;
        let revoke = b.revoke_other_sessions.unwrap_or(true);
        account(
            state
                .engine
                .call_account(&user.account.id, |reply| AccountMsg::ChangePassword {
                    token: user.token.clone(),
                    current: b.current_password.0,
                    new: b.new_password.0,
                    revoke_others: revoke,
                    reply,
                })
                .await,
        )?;
        Ok(ok())
    }

    /// Change the profile name.
    #[oai(path = "/profile", method = "put", operation_id = "updateProfile")]
    async fn profile(
        &self,
        state: poem::web::Data<&State>,
        auth: Auth,
        body: Json<Profile>,
    ) -> ApiResult<Json<Status>> {
        let id = auth.user().account.id.clone();
        let name = body.0.name;
        account(
            state
                .engine
                .call_account(&id, |reply| AccountMsg::UpdateProfile {
                    name: name.0,
                    reply,
                })
                .await,
        )?;
        Ok(ok())
    }

    /// Upload an avatar (PNG, JPEG or WebP, at most 5 MB); it is resized to 512 px.
    #[oai(path = "/avatar", method = "put", operation_id = "putAvatar")]
    async fn put_avatar(
        &self,
        state: poem::web::Data<&State>,
        auth: Auth,
        form: AvatarForm,
    ) -> ApiResult<Json<AvatarStatus>> {
        if form.file.size() > AVATAR_MAX {
            return Err(ApiError::too_large("the avatar is larger than 5 MB"));
        }
        let bytes = form
            .file
            .into_vec()
            .await
            .map_err(|e| ApiError::bad_request("invalid_upload", e.to_string()))?;
        // At most two decodes at once: each may hold up to 64 MB.
        let _permit = AVATAR_DECODES
            .acquire()
            .await
            .map_err(|e| ApiError::internal("avatar decodes", e))?;
        let png = blocking_caught(move || clipforge_actors::media::avatar::normalize(&bytes))
            .await
            .map_err(|e| ApiError::internal("avatar task", e))?
            .map_err(|e| ApiError::unsupported(e.to_string()))?;
        let id = auth.user().account.id.clone();
        let key = format!("avatars/{id}/{}.png", uuid::Uuid::new_v4());
        state
            .objects
            .put_bytes(&key, png, "image/png")
            .await
            .map_err(|e| ApiError::internal("storing avatar", e))?;
        let previous = account(
            state
                .engine
                .call_account(&id, |reply| AccountMsg::SetAvatar {
                    key: Some(key.clone()),
                    reply,
                })
                .await,
        )?;
        if let Some(old) = previous {
            let _ = state.objects.delete(&old).await;
        }
        let url = avatar_url(&state, &Some(key)).await.unwrap_or_default();
        Ok(Json(AvatarStatus {
            status: OkStatus::ok(),
            avatar_url: url.into(),
        }))
    }

    /// Remove the avatar.
    #[oai(path = "/avatar", method = "delete", operation_id = "deleteAvatar")]
    async fn delete_avatar(
        &self,
        state: poem::web::Data<&State>,
        auth: Auth,
    ) -> ApiResult<Json<Status>> {
        let id = auth.user().account.id.clone();
        let previous = account(
            state
                .engine
                .call_account(&id, |reply| AccountMsg::SetAvatar { key: None, reply })
                .await,
        )?;
        if let Some(old) = previous {
            let _ = state.objects.delete(&old).await;
        }
        Ok(ok())
    }
}
