//! Caption templates (contract 4.5): each account has any number of saved
//! styles, exactly one of them the default.
//!
//! The default is recorded on the account (`default_template_id`), not on
//! each template, so "exactly one default" holds by construction; `isDefault`
//! is derived from it.

use serde::{Deserialize, Deserializer, Serialize};

use super::clock::iso8601;
use super::error::{AccountError, Result};
use super::model::StoredAccount;
use super::store::new_id;
use super::store::{Batch, USERS};
use crate::captions::template::{CaptionStyle, CaptionStyleV1};
use crate::storage::record::{decode_payload, Record};

/// Most templates one account may keep.
pub const MAX_TEMPLATES: usize = 100;
pub(super) const DESCRIPTION_MAX_CHARS: usize = 500;

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

    pub(super) fn view(&self, is_default: bool) -> TemplateView {
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
pub(super) fn present<'de, D: Deserializer<'de>>(
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

pub(super) fn validate_description(description: &str) -> Result<String> {
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
pub(super) fn is_template_id(id: &str) -> bool {
    uuid::Uuid::parse_str(id).is_ok()
}

/// Moves the default flag to `template_id` (adds the account's write).
pub(super) fn make_default(
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
