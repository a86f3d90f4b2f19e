//! Caption templates (contract 4.5): each account has any number of saved
//! styles, exactly one of them the default.
//!
//! The default is recorded on the account (`default_template_id`), not on
//! each template, so "exactly one default" holds by construction; `isDefault`
//! is derived from it.

use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize};

use super::clock::iso8601;
use super::error::{AccountError, Result};
use super::held_parts::HeldTemplates;
use super::model::StoredAccount;
use super::store::{user_key, user_prefix, Batch, TEMPLATES, USERS};
use super::{new_id, Accounts};
use crate::captions::template::{CaptionStyle, CaptionStyleV1, PRESETS};
use crate::storage::record::{decode_payload, Record};

/// Most templates one account may keep.
pub const MAX_TEMPLATES: usize = 100;
const DESCRIPTION_MAX_CHARS: usize = 500;

/// A template as stored under `user/id`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct StoredTemplate {
    pub id: String,
    pub name: String,
    pub description: String,
    pub style: CaptionStyle,
    pub created_at: i64,
    pub updated_at: i64,
}

/// Version 2 added the style's `emphasize_keywords`; a version-1 template
/// (the same fields with the older style layout) is read with it on, as
/// every template rendered then.
impl Record for StoredTemplate {
    const KIND: &'static str = "caption template";
    const VERSION: u16 = 2;

    fn upgrade(version: u16, payload: &[u8]) -> crate::storage::kv::Result<Self> {
        if version != 1 {
            return Err(crate::storage::error::StorageError::Version {
                kind: Self::KIND,
                found: version,
                supported: Self::VERSION,
            });
        }
        let (id, name, description, style, created_at, updated_at): TemplateV1 =
            decode_payload(payload)?;
        Ok(StoredTemplate {
            id,
            name,
            description,
            style: style.into(),
            created_at,
            updated_at,
        })
    }
}

/// A version-1 template's fields in order.
pub(crate) type TemplateV1 = (String, String, String, CaptionStyleV1, i64, i64);

impl StoredTemplate {
    /// The template every account starts with.
    pub(crate) fn initial_default(now: i64) -> Self {
        Self {
            id: new_id(),
            name: "Default".to_string(),
            description: String::new(),
            style: CaptionStyle::default(),
            created_at: now,
            updated_at: now,
        }
    }

    fn view(&self, is_default: bool) -> TemplateView {
        TemplateView {
            id: self.id.clone(),
            name: self.name.clone(),
            description: self.description.clone(),
            is_default,
            style: self.style.clone(),
            created_at: iso8601(self.created_at),
            updated_at: iso8601(self.updated_at),
        }
    }
}

/// A caption template as the API shows it (contract 2.4).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TemplateView {
    pub id: String,
    pub name: String,
    pub description: String,
    pub is_default: bool,
    /// The style fields, in range.
    #[serde(flatten)]
    pub style: CaptionStyle,
    pub created_at: String,
    pub updated_at: String,
}

/// The body of template creation and update: every field optional. Other
/// fields (`id`, `createdAt`, ...) are ignored, so a client may send back a
/// whole template.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TemplateInput {
    pub name: Option<String>,
    pub description: Option<String>,
    pub is_default: Option<bool>,
    pub font_family: Option<String>,
    pub font_size: Option<f64>,
    pub font_color: Option<String>,
    pub highlight_color: Option<String>,
    pub stroke_color: Option<String>,
    pub stroke_width: Option<f64>,
    pub background: Option<bool>,
    /// `None`: omitted; `Some(None)`: `null`, no background colour.
    #[serde(default, deserialize_with = "present")]
    pub background_color: Option<Option<String>>,
    pub animation: Option<String>,
    pub position_y: Option<f64>,
    pub font_stack: Option<String>,
    pub watermark_enabled: Option<bool>,
    pub watermark_opacity: Option<f64>,
    pub watermark_position: Option<String>,
    pub watermark_size: Option<f64>,
    pub emphasize_keywords: Option<bool>,
}

/// Tells a field given as `null` from an omitted one.
fn present<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

impl TemplateInput {
    /// `base` with the given style fields replaced, clamped into range.
    pub fn apply_to(&self, base: CaptionStyle) -> CaptionStyle {
        let mut s = base;
        macro_rules! set {
            ($($field:ident),*) => {
                $(if let Some(value) = &self.$field {
                    s.$field = value.clone();
                })*
            };
        }
        set!(
            font_family,
            font_size,
            font_color,
            highlight_color,
            stroke_color,
            stroke_width,
            background,
            background_color,
            animation,
            position_y,
            font_stack,
            watermark_enabled,
            watermark_opacity,
            watermark_position,
            watermark_size,
            emphasize_keywords
        );
        s.clamped()
    }
}

fn validate_description(description: &str) -> Result<String> {
    let description = description.trim();
    if description.chars().count() > DESCRIPTION_MAX_CHARS {
        return Err(AccountError::InvalidInput(format!(
            "description: must be at most {DESCRIPTION_MAX_CHARS} characters"
        )));
    }
    if !super::text::text_ok(description) {
        return Err(AccountError::InvalidInput(
            "description: must not contain control or bidi override characters".into(),
        ));
    }
    Ok(description.to_string())
}

/// Template ids are UUIDs; anything else cannot name one.
fn is_template_id(id: &str) -> bool {
    uuid::Uuid::parse_str(id).is_ok()
}

impl Accounts {
    /// The user's templates, oldest first.
    pub fn list_templates(&self, user_id: &str) -> Result<Vec<TemplateView>> {
        let account = self.stored_account(user_id)?;
        let mut templates: Vec<StoredTemplate> =
            self.templates_of(user_id)?.values().cloned().collect();
        templates.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(templates
            .iter()
            .map(|t| t.view(t.id == account.default_template_id))
            .collect())
    }

    /// One of the user's templates.
    pub fn get_template(&self, user_id: &str, template_id: &str) -> Result<TemplateView> {
        let account = self.stored_account(user_id)?;
        let template = self.template(user_id, template_id)?;
        Ok(template.view(template.id == account.default_template_id))
    }

    /// Creates a template; omitted style fields inherit the user's default
    /// template. With `isDefault` true it becomes the default.
    pub fn create_template(&self, user_id: &str, input: &TemplateInput) -> Result<TemplateView> {
        let name = super::text::name(input.name.as_deref().unwrap_or_default())?;
        let description = validate_description(input.description.as_deref().unwrap_or_default())?;

        let _guard = self.lock(user_id);
        let mut account = self.stored_account(user_id)?;
        let count = match self.held_templates(user_id)? {
            Some(held) => held.len(),
            None => self.kv.count_prefix(TEMPLATES, &user_prefix(user_id))?,
        };
        if count >= MAX_TEMPLATES {
            return Err(AccountError::Conflict(format!(
                "an account can keep at most {MAX_TEMPLATES} caption templates"
            )));
        }
        let base = self.default_template(&account)?.style;
        let now = self.now();
        let template = StoredTemplate {
            id: new_id(),
            name,
            description,
            style: input.apply_to(base),
            created_at: now,
            updated_at: now,
        };
        let mut batch = Batch::new();
        batch.put(TEMPLATES, user_key(user_id, &template.id), &template)?;
        let is_default = input.is_default == Some(true);
        if is_default {
            make_default(&mut batch, &mut account, &template.id, now)?;
        }
        self.commit(batch)?;
        Ok(template.view(is_default))
    }

    /// Updates a template; omitted fields keep their values. `isDefault`
    /// true makes it the default; false on the default is refused, since an
    /// account always has exactly one.
    pub fn update_template(
        &self,
        user_id: &str,
        template_id: &str,
        input: &TemplateInput,
    ) -> Result<TemplateView> {
        let name = input.name.as_deref().map(super::text::name).transpose()?;
        let description = input
            .description
            .as_deref()
            .map(validate_description)
            .transpose()?;

        let _guard = self.lock(user_id);
        let mut account = self.stored_account(user_id)?;
        let mut template = self.template(user_id, template_id)?;
        let was_default = template.id == account.default_template_id;
        if was_default && input.is_default == Some(false) {
            return Err(AccountError::Conflict(
                "isDefault: an account always has one default template; \
                 make another template the default instead"
                    .to_string(),
            ));
        }
        let now = self.now();
        template.name = name.unwrap_or(template.name);
        template.description = description.unwrap_or(template.description);
        template.style = input.apply_to(template.style);
        template.updated_at = now;
        let mut batch = Batch::new();
        batch.put(TEMPLATES, user_key(user_id, &template.id), &template)?;
        let is_default = was_default || input.is_default == Some(true);
        if !was_default && is_default {
            make_default(&mut batch, &mut account, &template.id, now)?;
        }
        self.commit(batch)?;
        Ok(template.view(is_default))
    }

    /// Deletes a template other than the default.
    pub fn delete_template(&self, user_id: &str, template_id: &str) -> Result<()> {
        let _guard = self.lock(user_id);
        let account = self.stored_account(user_id)?;
        let template = self.template(user_id, template_id)?;
        if template.id == account.default_template_id {
            return Err(AccountError::Conflict(
                "the default template cannot be deleted; set another template as the default first"
                    .to_string(),
            ));
        }
        let mut batch = Batch::new();
        batch.delete(TEMPLATES, user_key(user_id, &template.id));
        self.commit(batch)
    }

    /// [`Self::resolve_template`] with the plan's watermark rule applied:
    /// the style a project or a clip of `user_id` is drawn with.
    pub fn styled(&self, user_id: &str, spec: &str) -> Result<CaptionStyle> {
        let account = self.get_account(user_id)?;
        Ok(self
            .plan_limits(account.plan)
            .enforce(self.resolve_template(user_id, spec)?))
    }

    /// The caption style a project's `captionTemplate` names: empty or
    /// `default` for the user's default template, an id or the name of one
    /// of the user's templates (a saved name wins over a built-in preset of
    /// the same name), a built-in preset name, or a JSON object whose omitted
    /// fields inherit the user's default template. The result is clamped; the
    /// plan's watermark rule is applied later ([`super::PlanLimits::enforce`]).
    pub fn resolve_template(&self, user_id: &str, spec: &str) -> Result<CaptionStyle> {
        let spec = spec.trim();
        if spec.starts_with('{') {
            let input: TemplateInput = serde_json::from_str(spec).map_err(|e| {
                AccountError::InvalidInput(format!("captionTemplate: invalid JSON template: {e}"))
            })?;
            let account = self.stored_account(user_id)?;
            return Ok(input.apply_to(self.default_template(&account)?.style));
        }
        if spec.is_empty() || spec.eq_ignore_ascii_case("default") {
            let account = self.stored_account(user_id)?;
            return Ok(self.default_template(&account)?.style.clamped());
        }
        if is_template_id(spec) {
            return Ok(self.template(user_id, spec)?.style.clamped());
        }
        if let Some(saved) = self.template_named(user_id, spec)? {
            return Ok(saved.style.clamped());
        }
        CaptionStyle::preset(spec).ok_or_else(|| {
            AccountError::InvalidInput(format!(
                "captionTemplate: not a template id, the name of one of your templates, \
                 a preset ({}) or a JSON object",
                PRESETS.join(", ")
            ))
        })
    }

    /// The user's template called `name` (case-insensitive, surrounding
    /// spaces ignored); with several of that name, the oldest.
    fn template_named(&self, user_id: &str, name: &str) -> Result<Option<StoredTemplate>> {
        let name = name.trim();
        Ok(self
            .templates_of(user_id)?
            .values()
            .filter(|t| t.name.trim().eq_ignore_ascii_case(name))
            .min_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)))
            .cloned())
    }

    /// The user's templates by id: held by the account's actor, else read
    /// from the store.
    fn templates_of(&self, user_id: &str) -> Result<Arc<HeldTemplates>> {
        match self.held_templates(user_id)? {
            Some(held) => Ok(held),
            None => Ok(Arc::new(self.load_templates(user_id)?)),
        }
    }

    /// One of the user's templates; another user's is not found.
    fn template(&self, user_id: &str, template_id: &str) -> Result<StoredTemplate> {
        if !is_template_id(template_id) {
            return Err(AccountError::NotFound("caption template"));
        }
        let template = match self.held_templates(user_id)? {
            Some(held) => held.get(template_id).cloned(),
            None => self.read(TEMPLATES, &user_key(user_id, template_id))?,
        };
        template.ok_or(AccountError::NotFound("caption template"))
    }

    fn default_template(&self, account: &StoredAccount) -> Result<StoredTemplate> {
        self.template(&account.id, &account.default_template_id)
            .map_err(|e| match e {
                AccountError::NotFound(_) => {
                    AccountError::Storage(crate::storage::kv::StorageError::Corrupt(format!(
                        "the default caption template of account {} is missing",
                        account.id
                    )))
                }
                other => other,
            })
    }
}

/// Moves the default flag to `template_id` (adds the account's write).
fn make_default(
    batch: &mut Batch,
    account: &mut StoredAccount,
    template_id: &str,
    now: i64,
) -> Result<()> {
    account.default_template_id = template_id.to_string();
    account.updated_at = now;
    batch.put(USERS, account.id.as_bytes(), account)
}

#[cfg(test)]
#[path = "templates_tests.rs"]
mod tests;
