//! API keys (issue 31): create, list and revoke the keys programs use
//! instead of a session. Managing keys needs a signed-in session
//! (`scopes.rs`); what a key may do is enforced where requests are
//! authenticated (`mod.rs`).

use poem::web::Data;
use poem_openapi::param::Path;
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object, OpenApi, Tags};

use super::formats::{DateTime, KeyScope, Text, Uuid};
use super::{account, ApiError, ApiResult, Auth, State};
use clipforge_actors::accounts::actor::AccountMsg;
use clipforge_actors::accounts::{parse_scopes, ApiKeyView};

#[derive(Tags)]
enum Tag {
    /// API keys for programs.
    ApiKeys,
}

pub struct KeysApi;

/// A new key.
#[derive(Object)]
struct NewKey {
    /// What the key is for (shown in the list).
    #[oai(validator(
        min_length = 1,
        max_length = 100,
        pattern = r"^[^\x00-\x1F\x7F-\x9F\u202A-\u202E\u2066-\u2069]*[^\s\x00-\x1F\x7F-\x9F\u202A-\u202E\u2066-\u2069][^\x00-\x1F\x7F-\x9F\u202A-\u202E\u2066-\u2069]*$"
    ))]
    name: Text,
    /// At least one; repeats are ignored.
    #[oai(validator(min_items = 1, max_items = 3))]
    scopes: Vec<KeyScope>,
}

/// An API key as listed: never the key itself.
#[derive(Object)]
#[oai(rename_all = "camelCase")]
struct ApiKey {
    id: Uuid,
    name: Text,
    /// The key's first characters (`cf_` and 8 more), to tell keys apart.
    prefix: Text,
    scopes: Vec<KeyScope>,
    created_at: DateTime,
    /// Null until the key is first used; updated at most once a minute.
    #[oai(nullable)]
    last_used_at: Option<DateTime>,
}

/// A key just created: the only time the key itself is shown.
#[derive(Object)]
#[oai(rename_all = "camelCase")]
struct CreatedKey {
    #[oai(flatten)]
    info: ApiKey,
    /// Send as `Authorization: Bearer <key>`. Only its hash is stored: it
    /// cannot be shown again.
    key: Text,
}

#[derive(Object)]
struct KeyList {
    /// Oldest first.
    keys: Vec<ApiKey>,
}

#[derive(Object)]
struct Revoked {
    /// Always true.
    revoked: bool,
}

#[derive(ApiResponse)]
enum Created {
    /// The key, shown this once.
    #[oai(status = 201)]
    Created(Json<CreatedKey>),
}

fn view(k: ApiKeyView) -> ApiKey {
    ApiKey {
        id: k.id.into(),
        name: k.name.into(),
        prefix: k.prefix.into(),
        scopes: k
            .scopes
            .iter()
            .map(|s| KeyScope::from(s.as_str()))
            .collect(),
        created_at: k.created_at.into(),
        last_used_at: k.last_used_at.map(DateTime::from),
    }
}

#[OpenApi(prefix_path = "/keys", tag = "Tag::ApiKeys")]
impl KeysApi {
    /// Create an API key with the given scopes (signed-in session only);
    /// the key is in the answer and nowhere else. At most 50 per account
    /// (409 beyond).
    #[oai(path = "/", method = "post", operation_id = "createApiKey")]
    async fn create(
        &self,
        state: Data<&State>,
        auth: Auth,
        body: Json<NewKey>,
    ) -> ApiResult<Created> {
        let NewKey { name, scopes } = body.0;
        let names: Vec<&str> = scopes.iter().map(|s| &**s).collect();
        let scopes = parse_scopes(&names).map_err(ApiError::from)?;
        let id = auth.user().account.id.clone();
        let (info, key) = account(
            state
                .engine
                .call_account(&id, |reply| AccountMsg::CreateApiKey {
                    name: name.0,
                    scopes,
                    reply,
                })
                .await,
        )?;
        Ok(Created::Created(Json(CreatedKey {
            info: view(info),
            key: key.into(),
        })))
    }

    /// The account's API keys, without the keys themselves.
    #[oai(path = "/", method = "get", operation_id = "listApiKeys")]
    async fn list(&self, state: Data<&State>, auth: Auth) -> ApiResult<Json<KeyList>> {
        let id = auth.user().account.id.clone();
        let keys = account(state.engine.call_account(&id, AccountMsg::ApiKeys).await)?;
        Ok(Json(KeyList {
            keys: keys.into_iter().map(view).collect(),
        }))
    }

    /// Revoke an API key: requests with it are refused (401) from now on.
    #[oai(path = "/:id", method = "delete", operation_id = "revokeApiKey")]
    async fn revoke(
        &self,
        state: Data<&State>,
        auth: Auth,
        id: Path<String>,
    ) -> ApiResult<Json<Revoked>> {
        let uid = auth.user().account.id.clone();
        let kid = id.0;
        account(
            state
                .engine
                .call_account(&uid, |reply| AccountMsg::RevokeApiKey { id: kid, reply })
                .await,
        )?;
        Ok(Json(Revoked { revoked: true }))
    }
}
