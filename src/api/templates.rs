//! Caption templates (contract 4.5): omitted style fields inherit the
//! default template, values are clamped, the default cannot be deleted.

use poem::web::Data;
use poem_openapi::param::Path;
use poem_openapi::payload::Json;
use poem_openapi::types::MaybeUndefined;
use poem_openapi::{ApiResponse, Object, OpenApi, Tags};

use super::formats::{Animation, DateTime, Text, Uuid, WatermarkPosition};
use super::{account, ApiResult, Auth, State};
use clipforge_actors::accounts::actor::AccountMsg;
use clipforge_actors::accounts::{TemplateInput, TemplateView};
use clipforge_actors::captions::template::CaptionStyle;

#[derive(Tags)]
enum Tag {
    /// Caption templates.
    CaptionTemplates,
}

pub struct TemplatesApi;

/// Style fields of a template body. Numbers out of range are clamped,
/// unknown animations, positions and colours fall back to the default's
/// (contract 4.5 rule 3); omitted fields keep the current (on creation: the
/// default template's) value.
#[derive(Object)]
#[oai(rename_all = "camelCase")]
struct StyleInput {
    #[oai(nullable)]
    font_family: Option<Text>,
    /// Clamped to 12–200.
    #[oai(nullable)]
    font_size: Option<f64>,
    /// Hex colour, `#RRGGBB` or `#RRGGBBAA`.
    #[oai(nullable)]
    font_color: Option<Text>,
    #[oai(nullable)]
    highlight_color: Option<Text>,
    #[oai(nullable)]
    stroke_color: Option<Text>,
    /// Clamped to 0–20.
    #[oai(nullable)]
    stroke_width: Option<f64>,
    #[oai(nullable)]
    background: Option<bool>,
    /// `null` or empty: no background colour.
    #[oai(nullable)]
    background_color: MaybeUndefined<Text>,
    /// none, fade, pop, bounce, karaoke or typewriter.
    #[oai(nullable)]
    animation: Option<Text>,
    /// Clamped to 0–100 (percent of the height).
    #[oai(nullable)]
    position_y: Option<f64>,
    #[oai(nullable)]
    font_stack: Option<Text>,
    /// On the free plan the watermark is on whatever this says (contract
    /// 4.5 rule 4).
    #[oai(nullable)]
    watermark_enabled: Option<bool>,
    /// Clamped to 0–1; on the free plan clips use at least 0.5.
    #[oai(nullable)]
    watermark_opacity: Option<f64>,
    /// `vertical-horizontal`: top|middle|bottom - left|center|right.
    #[oai(nullable)]
    watermark_position: Option<Text>,
    /// Percent of the frame's width, clamped to 1–100; on the free plan
    /// clips use at least 12.
    #[oai(nullable)]
    watermark_size: Option<f64>,
    /// Draw salient words (numbers, names, rare long words) in
    /// `highlightColor` while they are not being spoken; false highlights
    /// only the spoken word. Default true.
    #[oai(nullable)]
    emphasize_keywords: Option<bool>,
}

/// A new template: the fields of CaptionTemplate without `id`, `createdAt`
/// and `updatedAt` (other fields are ignored).
#[derive(Object)]
#[oai(rename_all = "camelCase")]
struct NewTemplate {
    #[oai(validator(
        min_length = 1,
        max_length = 100,
        pattern = r"^[^\x00-\x1F\x7F-\x9F\u202A-\u202E\u2066-\u2069]*[^\s\x00-\x1F\x7F-\x9F\u202A-\u202E\u2066-\u2069][^\x00-\x1F\x7F-\x9F\u202A-\u202E\u2066-\u2069]*$"
    ))]
    name: Text,
    /// Line breaks and tabs allowed; no other control or bidi override characters.
    #[oai(
        nullable,
        validator(
            max_length = 500,
            pattern = r"^[^\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F\u202A-\u202E\u2066-\u2069]*$"
        )
    )]
    description: Option<Text>,
    /// Make it the account's default template.
    #[oai(nullable)]
    is_default: Option<bool>,
    #[oai(flatten)]
    style: StyleInput,
}

/// Changes to a template: any field of the creation body.
#[derive(Object)]
#[oai(rename_all = "camelCase")]
struct TemplateChanges {
    #[oai(
        nullable,
        validator(
            min_length = 1,
            max_length = 100,
            pattern = r"^[^\x00-\x1F\x7F-\x9F\u202A-\u202E\u2066-\u2069]*[^\s\x00-\x1F\x7F-\x9F\u202A-\u202E\u2066-\u2069][^\x00-\x1F\x7F-\x9F\u202A-\u202E\u2066-\u2069]*$"
        )
    )]
    name: Option<Text>,
    /// Line breaks and tabs allowed; no other control or bidi override characters.
    #[oai(
        nullable,
        validator(
            max_length = 500,
            pattern = r"^[^\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F\u202A-\u202E\u2066-\u2069]*$"
        )
    )]
    description: Option<Text>,
    /// Make it the account's default template.
    #[oai(nullable)]
    is_default: Option<bool>,
    #[oai(flatten)]
    style: StyleInput,
}

/// The style fields of a caption template (contract 2.4), in range.
#[derive(Object)]
#[oai(rename_all = "camelCase")]
pub struct TemplateStyle {
    font_family: Text,
    #[oai(validator(minimum(value = "12"), maximum(value = "200")))]
    font_size: f64,
    font_color: Text,
    highlight_color: Text,
    stroke_color: Text,
    #[oai(validator(minimum(value = "0"), maximum(value = "20")))]
    stroke_width: f64,
    background: bool,
    #[oai(nullable)]
    background_color: Option<Text>,
    animation: Animation,
    #[oai(validator(minimum(value = "0"), maximum(value = "100")))]
    position_y: f64,
    /// CSS font-family list.
    font_stack: Text,
    watermark_enabled: bool,
    #[oai(validator(minimum(value = "0"), maximum(value = "1")))]
    watermark_opacity: f64,
    watermark_position: WatermarkPosition,
    #[oai(validator(minimum(value = "1"), maximum(value = "100")))]
    watermark_size: f64,
    /// Salient words (numbers, names, rare long words) are drawn in
    /// `highlightColor` even when not being spoken.
    emphasize_keywords: bool,
}

impl From<&CaptionStyle> for TemplateStyle {
    fn from(s: &CaptionStyle) -> Self {
        TemplateStyle {
            font_family: s.font_family.clone().into(),
            font_size: s.font_size,
            font_color: s.font_color.clone().into(),
            highlight_color: s.highlight_color.clone().into(),
            stroke_color: s.stroke_color.clone().into(),
            stroke_width: s.stroke_width,
            background: s.background,
            background_color: s.background_color.clone().map(Text),
            animation: s.animation.clone().into(),
            position_y: s.position_y,
            font_stack: s.font_stack.clone().into(),
            watermark_enabled: s.watermark_enabled,
            watermark_opacity: s.watermark_opacity,
            watermark_position: s.watermark_position.clone().into(),
            watermark_size: s.watermark_size,
            emphasize_keywords: s.emphasize_keywords,
        }
    }
}

/// A caption template (contract 2.4), its values in range.
#[derive(Object)]
#[oai(rename_all = "camelCase")]
struct CaptionTemplate {
    id: Uuid,
    name: Text,
    description: Text,
    /// Exactly one template of an account is the default.
    is_default: bool,
    #[oai(flatten)]
    style: TemplateStyle,
    created_at: DateTime,
    updated_at: DateTime,
}

#[derive(Object)]
struct TemplateList {
    /// Oldest first.
    templates: Vec<CaptionTemplate>,
}

#[derive(Object)]
struct Deleted {
    /// Always true.
    deleted: bool,
}

#[derive(ApiResponse)]
enum Created {
    /// The created template.
    #[oai(status = 201)]
    Created(Json<CaptionTemplate>),
}

fn text(v: Option<Text>) -> Option<String> {
    v.map(|t| t.0)
}

fn input(
    name: Option<Text>,
    description: Option<Text>,
    is_default: Option<bool>,
    s: StyleInput,
) -> TemplateInput {
    TemplateInput {
        name: text(name),
        description: text(description),
        is_default,
        font_family: text(s.font_family),
        font_size: s.font_size,
        font_color: text(s.font_color),
        highlight_color: text(s.highlight_color),
        stroke_color: text(s.stroke_color),
        stroke_width: s.stroke_width,
        background: s.background,
        background_color: match s.background_color {
            MaybeUndefined::Undefined => None,
            MaybeUndefined::Null => Some(None),
            MaybeUndefined::Value(c) => Some(Some(c.0)),
        },
        animation: text(s.animation),
        position_y: s.position_y,
        font_stack: text(s.font_stack),
        watermark_enabled: s.watermark_enabled,
        watermark_opacity: s.watermark_opacity,
        watermark_position: text(s.watermark_position),
        watermark_size: s.watermark_size,
        emphasize_keywords: s.emphasize_keywords,
    }
}

fn view(t: TemplateView) -> CaptionTemplate {
    CaptionTemplate {
        id: t.id.into(),
        name: t.name.into(),
        description: t.description.into(),
        is_default: t.is_default,
        style: TemplateStyle::from(&t.style),
        created_at: t.created_at.into(),
        updated_at: t.updated_at.into(),
    }
}

#[OpenApi(prefix_path = "/caption-templates", tag = "Tag::CaptionTemplates")]
impl TemplatesApi {
    /// The user's caption templates: `{templates: CaptionTemplate[]}`.
    #[oai(path = "/", method = "get", operation_id = "listCaptionTemplates")]
    async fn list(&self, state: Data<&State>, auth: Auth) -> ApiResult<Json<TemplateList>> {
        let id = auth.user().account.id.clone();
        let list = account(state.engine.call_account(&id, AccountMsg::Templates).await)?;
        Ok(Json(TemplateList {
            templates: list.into_iter().map(view).collect(),
        }))
    }

    /// Create a template (fields of CaptionTemplate without id/createdAt/updatedAt).
    #[oai(path = "/", method = "post", operation_id = "createCaptionTemplate")]
    async fn create(
        &self,
        state: Data<&State>,
        auth: Auth,
        body: Json<NewTemplate>,
    ) -> ApiResult<Created> {
        let b = body.0;
        let input = input(Some(b.name), b.description, b.is_default, b.style);
        let id = auth.user().account.id.clone();
        let t = account(
            state
                .engine
                .call_account(&id, |reply| AccountMsg::CreateTemplate { input, reply })
                .await,
        )?;
        Ok(Created::Created(Json(view(t))))
    }

    /// Update a template (same shape as creation, every field optional).
    #[oai(path = "/:id", method = "put", operation_id = "updateCaptionTemplate")]
    async fn update(
        &self,
        state: Data<&State>,
        auth: Auth,
        id: Path<String>,
        body: Json<TemplateChanges>,
    ) -> ApiResult<Json<CaptionTemplate>> {
        let b = body.0;
        let input = input(b.name, b.description, b.is_default, b.style);
        let uid = auth.user().account.id.clone();
        let tid = id.0;
        let t = account(
            state
                .engine
                .call_account(&uid, |reply| AccountMsg::UpdateTemplate {
                    id: tid,
                    input,
                    reply,
                })
                .await,
        )?;
        Ok(Json(view(t)))
    }

    /// Delete a template; the default one answers 409.
    #[oai(
        path = "/:id",
        method = "delete",
        operation_id = "deleteCaptionTemplate"
    )]
    async fn delete(
        &self,
        state: Data<&State>,
        auth: Auth,
        id: Path<String>,
    ) -> ApiResult<Json<Deleted>> {
        let uid = auth.user().account.id.clone();
        let tid = id.0;
        account(
            state
                .engine
                .call_account(&uid, |reply| AccountMsg::DeleteTemplate { id: tid, reply })
                .await,
        )?;
        Ok(Json(Deleted { deleted: true }))
    }
}
