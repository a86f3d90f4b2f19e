//! Notifications (contract 4.7).

use clipforge_actors::accounts::actor::AccountMsg;
use std::collections::BTreeMap;

use poem::web::Data;
use poem_openapi::param::Path;
use poem_openapi::payload::Json;
use poem_openapi::{Object, OpenApi, Tags};

use super::auth::{ok, Status};
use super::formats::{DateTime, NotificationType, Text, Uuid};
use super::{account, ApiResult, Auth, State};

#[derive(Tags)]
enum Tag {
    /// Notifications.
    Notifications,
}

pub struct NotificationsApi;

/// A notification (contract 2.7).
#[derive(Object)]
#[oai(rename_all = "camelCase")]
struct Notification {
    id: Uuid,
    #[oai(rename = "type")]
    kind: NotificationType,
    title: Text,
    message: Text,
    read: bool,
    created_at: DateTime,
    /// The values `title` and `message` name, for a client that words them
    /// in its own language (the console does, in English and Portuguese).
    /// By `type`: `project_completed` projectTitle, clips;
    /// `project_failed` projectTitle, error; `post_published` postTitle,
    /// platform; `post_failed` postTitle, platform, error; `plan_changed`
    /// plan, credits (absent when unlimited); `credits_low` available,
    /// total, renews (a date); `payment_failed` plan, retryOn (a date, when a
    /// retry is planned); `webhook_disabled` url; `clip_rendered` version,
    /// clipTitle. Empty on notifications written before params existed.
    /// `error` is the server's English reason.
    params: BTreeMap<String, String>,
}

#[derive(Object)]
struct NotificationList {
    /// Newest first (at most 200 are kept).
    notifications: Vec<Notification>,
}

#[OpenApi(prefix_path = "/notifications", tag = "Tag::Notifications")]
impl NotificationsApi {
    /// Newest first: `{notifications: Notification[]}`.
    #[oai(path = "/", method = "get", operation_id = "listNotifications")]
    async fn list(&self, state: Data<&State>, auth: Auth) -> ApiResult<Json<NotificationList>> {
        let id = auth.user().account.id.clone();
        let engine = &state.engine;
        // From the account actor's memory once it holds the notifications
        // (loaded by the first list of an activation, in the actor).
        let held = engine
            .desk()
            .held(&id)
            .and_then(|h| engine.accounts().held_notification_list(&h));
        let list = match held {
            Some(list) => list,
            None => account(engine.call_account(&id, AccountMsg::Notifications).await)?,
        };
        let notifications = list
            .into_iter()
            .map(|n| Notification {
                id: n.id.into(),
                kind: n.kind.as_str().into(),
                title: n.title.into(),
                message: n.message.into(),
                read: n.read,
                created_at: n.created_at.into(),
                params: n.params,
            })
            .collect();
        Ok(Json(NotificationList { notifications }))
    }

    /// Mark every notification read.
    #[oai(path = "/read", method = "post", operation_id = "readAllNotifications")]
    async fn read_all(&self, state: Data<&State>, auth: Auth) -> ApiResult<Json<Status>> {
        let id = auth.user().account.id.clone();
        account(
            state
                .engine
                .call_account(&id, AccountMsg::MarkAllRead)
                .await,
        )?;
        Ok(ok())
    }

    /// Mark one notification read.
    #[oai(path = "/:id/read", method = "post", operation_id = "readNotification")]
    async fn read_one(
        &self,
        state: Data<&State>,
        auth: Auth,
        id: Path<String>,
    ) -> ApiResult<Json<Status>> {
        let uid = auth.user().account.id.clone();
        let nid = id.0;
        account(
            state
                .engine
                .call_account(&uid, |reply| AccountMsg::MarkRead { id: nid, reply })
                .await,
        )?;
        Ok(ok())
    }
}
