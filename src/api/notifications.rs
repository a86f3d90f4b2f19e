//! Notifications (contract 4.7).

use poem::web::Data;
use poem_openapi::param::Path;
use poem_openapi::payload::Json;
use poem_openapi::{OpenApi, Tags};
use serde_json::Value;

use super::{account, ApiError, ApiResult, Auth, State};

#[derive(Tags)]
enum Tag {
    /// Notifications.
    Notifications,
}

pub struct NotificationsApi;

#[OpenApi(prefix_path = "/notifications", tag = "Tag::Notifications")]
impl NotificationsApi {
    /// Newest first: `{notifications: Notification[]}`.
    #[oai(path = "/", method = "get")]
    async fn list(&self, state: Data<&State>, auth: Auth) -> ApiResult<Json<Value>> {
        let id = auth.user().account.id.clone();
        let list = account(
            state
                .services
                .with_account(&id.clone(), move |a| a.notifications(&id))
                .await,
        )?;
        let list = serde_json::to_value(&list).map_err(|e| ApiError::internal("encoding", e))?;
        Ok(Json(serde_json::json!({ "notifications": list })))
    }

    /// Mark every notification read.
    #[oai(path = "/read", method = "post")]
    async fn read_all(&self, state: Data<&State>, auth: Auth) -> ApiResult<Json<Value>> {
        let id = auth.user().account.id.clone();
        account(
            state
                .services
                .with_account(&id.clone(), move |a| a.mark_all_read(&id))
                .await,
        )?;
        Ok(Json(serde_json::json!({ "status": "ok" })))
    }

    /// Mark one notification read.
    #[oai(path = "/:id/read", method = "post")]
    async fn read_one(
        &self,
        state: Data<&State>,
        auth: Auth,
        id: Path<String>,
    ) -> ApiResult<Json<Value>> {
        let uid = auth.user().account.id.clone();
        let nid = id.0;
        account(
            state
                .services
                .with_account(&uid.clone(), move |a| a.mark_read(&uid, &nid))
                .await,
        )?;
        Ok(Json(serde_json::json!({ "status": "ok" })))
    }
}
