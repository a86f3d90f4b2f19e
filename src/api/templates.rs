//! Caption templates (contract 4.5): omitted style fields inherit the
//! default template, values are clamped, the default cannot be deleted.

use poem::web::Data;
use poem_openapi::param::Path;
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, OpenApi, Tags};
use serde_json::Value;

use super::{account, ApiError, ApiResult, Auth, State};
use clipforge_actors::accounts::TemplateInput;

#[derive(Tags)]
enum Tag {
    /// Caption templates.
    CaptionTemplates,
}

pub struct TemplatesApi;

#[derive(ApiResponse)]
enum Created {
    /// The created template.
    #[oai(status = 201)]
    Created(Json<Value>),
}

fn parse_input(v: Value) -> ApiResult<TemplateInput> {
    serde_json::from_value(v)
        .map_err(|e| ApiError::bad_request("invalid_template", format!("invalid template: {e}")))
}

fn json<T: serde::Serialize>(v: &T) -> ApiResult<Value> {
    serde_json::to_value(v).map_err(|e| ApiError::internal("encoding", e))
}

#[OpenApi(prefix_path = "/caption-templates", tag = "Tag::CaptionTemplates")]
impl TemplatesApi {
    /// The user's caption templates: `{templates: CaptionTemplate[]}`.
    #[oai(path = "/", method = "get")]
    async fn list(&self, state: Data<&State>, auth: Auth) -> ApiResult<Json<Value>> {
        let id = auth.user().account.id.clone();
        let list = account(
            state
                .services
                .with_account(&id.clone(), move |a| a.list_templates(&id))
                .await,
        )?;
        Ok(Json(serde_json::json!({ "templates": json(&list)? })))
    }

    /// Create a template (fields of CaptionTemplate without id/createdAt/updatedAt).
    #[oai(path = "/", method = "post")]
    async fn create(
        &self,
        state: Data<&State>,
        auth: Auth,
        body: Json<Value>,
    ) -> ApiResult<Created> {
        let input = parse_input(body.0)?;
        let id = auth.user().account.id.clone();
        let t = account(
            state
                .services
                .with_account(&id.clone(), move |a| a.create_template(&id, &input))
                .await,
        )?;
        Ok(Created::Created(Json(json(&t)?)))
    }

    /// Update a template (same shape as creation).
    #[oai(path = "/:id", method = "put")]
    async fn update(
        &self,
        state: Data<&State>,
        auth: Auth,
        id: Path<String>,
        body: Json<Value>,
    ) -> ApiResult<Json<Value>> {
        let input = parse_input(body.0)?;
        let uid = auth.user().account.id.clone();
        let tid = id.0;
        let t = account(
            state
                .services
                .with_account(&uid.clone(), move |a| a.update_template(&uid, &tid, &input))
                .await,
        )?;
        Ok(Json(json(&t)?))
    }

    /// Delete a template; the default one answers 409.
    #[oai(path = "/:id", method = "delete")]
    async fn delete(
        &self,
        state: Data<&State>,
        auth: Auth,
        id: Path<String>,
    ) -> ApiResult<Json<Value>> {
        let uid = auth.user().account.id.clone();
        let tid = id.0;
        account(
            state
                .services
                .with_account(&uid.clone(), move |a| a.delete_template(&uid, &tid))
                .await,
        )?;
        Ok(Json(serde_json::json!({ "deleted": true })))
    }
}
