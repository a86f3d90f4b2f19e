//! The caption template operations on an account: create, list, change,
//! delete, the default (the records are in `templates.rs`).

use super::domain::Accounts;
use super::error::{AccountError, Result};
use super::held::HeldTemplates;
use super::model::StoredAccount;
use super::store::new_id;
use super::store::{user_key, user_prefix, Batch, TEMPLATES};
use super::templates::*;
use crate::captions::template::{CaptionStyle, PRESETS};
use std::sync::Arc;

impl Accounts {
    /// The user's templates, oldest first.
    pub async fn list_templates(&self, user_id: &str) -> Result<Vec<TemplateView>> {
        let account = self.stored_account(user_id).await?;
        let mut templates: Vec<StoredTemplate> = self
            .templates_of(user_id)
            .await?
            .values()
            .cloned()
            .collect();
        templates.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(templates
            .iter()
            .map(|t| t.view(t.id == account.default_template_id))
            .collect())
    }

    /// One of the user's templates.
    pub async fn get_template(&self, user_id: &str, template_id: &str) -> Result<TemplateView> {
        let account = self.stored_account(user_id).await?;
        let template = self.template(user_id, template_id).await?;
        Ok(template.view(template.id == account.default_template_id))
    }

    /// Creates a template; omitted style fields inherit the user's default
    /// template. With `isDefault` true it becomes the default.
    pub async fn create_template(
        &self,
        user_id: &str,
        input: &TemplateInput,
    ) -> Result<TemplateView> {
        let name = super::text::name(input.name.as_deref().unwrap_or_default())?;
        let description = validate_description(input.description.as_deref().unwrap_or_default())?;

        let _guard = self.lock(user_id).await;
        let mut account = self.stored_account(user_id).await?;
        let count = match self.held_templates(user_id).await? {
            Some(held) => held.len(),
            None => {
                let prefix = user_prefix(user_id);
                self.kv.count_prefix_async(TEMPLATES, &prefix).await?
            }
        };
        if count >= MAX_TEMPLATES {
            return Err(AccountError::Conflict(format!(
                "an account can keep at most {MAX_TEMPLATES} caption templates"
            )));
        }
        let base = self.default_template(&account).await?.style;
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
        self.commit(batch).await?;
        Ok(template.view(is_default))
    }

    /// Updates a template; omitted fields keep their values. `isDefault`
    /// true makes it the default; false on the default is refused, since an
    /// account always has exactly one.
    pub async fn update_template(
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

        let _guard = self.lock(user_id).await;
        let mut account = self.stored_account(user_id).await?;
        let mut template = self.template(user_id, template_id).await?;
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
        self.commit(batch).await?;
        Ok(template.view(is_default))
    }

    /// Deletes a template other than the default.
    pub async fn delete_template(&self, user_id: &str, template_id: &str) -> Result<()> {
        let _guard = self.lock(user_id).await;
        let account = self.stored_account(user_id).await?;
        let template = self.template(user_id, template_id).await?;
        if template.id == account.default_template_id {
            return Err(AccountError::Conflict(
                "the default template cannot be deleted; set another template as the default first"
                    .to_string(),
            ));
        }
        let mut batch = Batch::new();
        batch.delete(TEMPLATES, user_key(user_id, &template.id));
        self.commit(batch).await
    }

    /// [`Self::resolve_template`] with the plan's watermark rule applied:
    /// the style a project or a clip of `user_id` is drawn with.
    pub async fn styled(&self, user_id: &str, spec: &str) -> Result<CaptionStyle> {
        let account = self.get_account(user_id).await?;
        Ok(self
            .plan_limits(account.plan)
            .enforce(self.resolve_template(user_id, spec).await?))
    }

    /// The caption style a project's `captionTemplate` names: empty or
    /// `default` for the user's default template, an id or the name of one
    /// of the user's templates (a saved name wins over a built-in preset of
    /// the same name), a built-in preset name, or a JSON object whose omitted
    /// fields inherit the user's default template. The result is clamped; the
    /// plan's watermark rule is applied later ([`super::PlanLimits::enforce`]).
    pub async fn resolve_template(&self, user_id: &str, spec: &str) -> Result<CaptionStyle> {
        let spec = spec.trim();
        if spec.starts_with('{') {
            let input: TemplateInput = serde_json::from_str(spec).map_err(|e| {
                AccountError::InvalidInput(format!("captionTemplate: invalid JSON template: {e}"))
            })?;
            let account = self.stored_account(user_id).await?;
            return Ok(input.apply_to(self.default_template(&account).await?.style));
        }
        if spec.is_empty() || spec.eq_ignore_ascii_case("default") {
            let account = self.stored_account(user_id).await?;
            return Ok(self.default_template(&account).await?.style.clamped());
        }
        if is_template_id(spec) {
            return Ok(self.template(user_id, spec).await?.style.clamped());
        }
        if let Some(saved) = self.template_named(user_id, spec).await? {
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
    async fn template_named(&self, user_id: &str, name: &str) -> Result<Option<StoredTemplate>> {
        let name = name.trim();
        Ok(self
            .templates_of(user_id)
            .await?
            .values()
            .filter(|t| t.name.trim().eq_ignore_ascii_case(name))
            .min_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)))
            .cloned())
    }

    /// The user's templates by id: held by the account's actor, else read
    /// from the store.
    async fn templates_of(&self, user_id: &str) -> Result<Arc<HeldTemplates>> {
        match self.held_templates(user_id).await? {
            Some(held) => Ok(held),
            None => Ok(Arc::new(self.load_templates(user_id).await?)),
        }
    }

    /// One of the user's templates; another user's is not found.
    async fn template(&self, user_id: &str, template_id: &str) -> Result<StoredTemplate> {
        if !is_template_id(template_id) {
            return Err(AccountError::NotFound("caption template"));
        }
        let template = match self.held_templates(user_id).await? {
            Some(held) => held.get(template_id).cloned(),
            None => {
                self.read(TEMPLATES, &user_key(user_id, template_id))
                    .await?
            }
        };
        template.ok_or(AccountError::NotFound("caption template"))
    }

    async fn default_template(&self, account: &StoredAccount) -> Result<StoredTemplate> {
        self.template(&account.id, &account.default_template_id)
            .await
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
