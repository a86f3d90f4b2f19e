//! Strings as the API document shows them: each newtype is a JSON string
//! with an OpenAPI `format` (`email`, `uuid`, `date-time`, `date`, `uri`),
//! or a plain string that is only a string (poem-openapi's own `String`
//! also takes numbers and booleans, which a schema says are invalid).
//!
//! They parse any JSON string: the handlers and the account rules check the
//! content and answer with their own error codes, so a client sees the same
//! error body whatever the document says.

use std::borrow::Cow;

use poem_openapi::registry::{MetaSchema, MetaSchemaRef, Registry};
use poem_openapi::types::{
    ParseError, ParseFromJSON, ParseFromParameter, ParseResult, ToJSON, Type,
};
use serde_json::Value;

macro_rules! string_type {
    ($(#[$doc:meta])* $name:ident, $type_name:literal, $format:expr) => {
        $(#[$doc])*
        #[derive(Clone, Debug, Default, PartialEq, Eq)]
        pub struct $name(pub String);

        impl From<String> for $name {
            fn from(s: String) -> Self {
                Self(s)
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                Self(s.to_string())
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl std::ops::Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl Type for $name {
            const IS_REQUIRED: bool = true;
            type RawValueType = Self;
            type RawElementValueType = Self;

            fn name() -> Cow<'static, str> {
                $type_name.into()
            }

            fn schema_ref() -> MetaSchemaRef {
                let format: Option<&'static str> = $format;
                MetaSchemaRef::Inline(Box::new(match format {
                    Some(f) => MetaSchema::new_with_format("string", f),
                    None => MetaSchema::new("string"),
                }))
            }

            fn as_raw_value(&self) -> Option<&Self> {
                Some(self)
            }

            fn raw_element_iter<'a>(&'a self) -> Box<dyn Iterator<Item = &'a Self> + 'a> {
                Box::new(self.as_raw_value().into_iter())
            }

            fn is_empty(&self) -> bool {
                self.0.is_empty()
            }
        }

        impl ParseFromJSON for $name {
            fn parse_from_json(value: Option<Value>) -> ParseResult<Self> {
                match value.unwrap_or_default() {
                    Value::String(s) => Ok(Self(s)),
                    other => Err(ParseError::expected_type(other)),
                }
            }
        }

        impl ParseFromParameter for $name {
            fn parse_from_parameter(value: &str) -> ParseResult<Self> {
                Ok(Self(value.to_string()))
            }
        }

        impl ToJSON for $name {
            fn to_json(&self) -> Option<Value> {
                Some(Value::String(self.0.clone()))
            }
        }
    };
}

string_type!(
    /// A JSON string, nothing else.
    Text,
    "string",
    None
);
string_type!(
    /// An email address (`format: email`).
    Email,
    "string_email",
    Some("email")
);
string_type!(
    /// A UUID (`format: uuid`).
    Uuid,
    "string_uuid",
    Some("uuid")
);
string_type!(
    /// An ISO 8601 UTC timestamp (`format: date-time`).
    DateTime,
    "string_date_time",
    Some("date-time")
);
string_type!(
    /// A calendar date, YYYY-MM-DD (`format: date`).
    Date,
    "string_date",
    Some("date")
);
string_type!(
    /// An absolute URL (`format: uri`).
    Uri,
    "string_uri",
    Some("uri")
);

/// A string with a fixed set of values, shown as a named schema with
/// `enum`. Like the strings above it parses any JSON string: the handler
/// refuses other values with its own error code (or, for caption styles,
/// brings them into range as the contract says).
macro_rules! string_enum {
    ($(#[$doc:meta])* $name:ident, $schema:literal, $description:literal, [$($value:literal),+ $(,)?]) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq)]
        pub struct $name(pub String);

        impl $name {
            pub const VALUES: &'static [&'static str] = &[$($value),+];
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                Self(s.to_string())
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> Self {
                Self(s)
            }
        }

        impl std::ops::Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl Type for $name {
            const IS_REQUIRED: bool = true;
            type RawValueType = Self;
            type RawElementValueType = Self;

            fn name() -> Cow<'static, str> {
                $schema.into()
            }

            fn schema_ref() -> MetaSchemaRef {
                MetaSchemaRef::Reference($schema.to_string())
            }

            fn register(registry: &mut Registry) {
                registry.create_schema::<Self, _>($schema.to_string(), |_| MetaSchema {
                    description: Some($description),
                    enum_items: Self::VALUES.iter().map(|v| Value::String(v.to_string())).collect(),
                    ..MetaSchema::new("string")
                });
            }

            fn as_raw_value(&self) -> Option<&Self> {
                Some(self)
            }

            fn raw_element_iter<'a>(&'a self) -> Box<dyn Iterator<Item = &'a Self> + 'a> {
                Box::new(self.as_raw_value().into_iter())
            }
        }

        impl ParseFromJSON for $name {
            fn parse_from_json(value: Option<Value>) -> ParseResult<Self> {
                match value.unwrap_or_default() {
                    Value::String(s) => Ok(Self(s)),
                    other => Err(ParseError::expected_type(other)),
                }
            }
        }

        impl ParseFromParameter for $name {
            fn parse_from_parameter(value: &str) -> ParseResult<Self> {
                Ok(Self(value.to_string()))
            }
        }

        impl ToJSON for $name {
            fn to_json(&self) -> Option<Value> {
                Some(Value::String(self.0.clone()))
            }
        }
    };
}

string_enum!(OkStatus, "OkStatus", "The change was made.", ["ok"]);

impl OkStatus {
    pub fn ok() -> Self {
        Self("ok".into())
    }
}

string_enum!(
    Plan,
    "Plan",
    "A plan.",
    ["free", "creator", "pro", "enterprise"]
);
string_enum!(
    PaidPlan,
    "PaidPlan",
    "A plan bought through Stripe Checkout.",
    ["creator", "pro"]
);
string_enum!(
    Frequency,
    "Frequency",
    "How often a paid plan is billed.",
    ["monthly", "yearly"]
);
string_enum!(
    Provider,
    "Provider",
    "A platform clips are published to.",
    ["tiktok", "instagram", "youtube"]
);
string_enum!(
    ClipDurationPreset,
    "ClipDurationPreset",
    "Length range of the clips, in seconds (auto: chosen per clip).",
    ["auto", "15-30", "30-60", "60-90"]
);
string_enum!(
    ClipLayout,
    "ClipLayout",
    "How the picture is laid out in a clip: `auto` (chosen per clip: one face followed, two people as active speaker or split screen, a small corner face as a screen recording with a face inset, else fit), `single` (follow one face), `split` (two faces, stacked top/bottom in tall frames, side by side in 16:9), `speaker` (follow whichever of two faces is talking), `screen` (the whole frame fitted with the face as an inset), `fit` (the whole frame over a blurred copy of itself). A clip's own layout is never `auto`.",
    ["auto", "single", "split", "speaker", "screen", "fit"]
);
string_enum!(
    ClipStatus,
    "ClipStatus",
    "Whether a clip's newest version is playable: `ready`, `rendering` (an edit is being rendered; the files are the previous version's) or `failed` (the edit's render failed; the previous version stays).",
    ["ready", "rendering", "failed"]
);
string_enum!(
    AspectRatio,
    "AspectRatio",
    "Shape of the clips: 9:16 (1080x1920), 1:1 (1080x1080), 4:5 (1080x1350) or 16:9 (1920x1080).",
    ["9:16", "1:1", "4:5", "16:9"]
);
string_enum!(
    Animation,
    "Animation",
    "How caption words appear.",
    ["none", "fade", "pop", "bounce", "karaoke", "typewriter"]
);
string_enum!(
    WatermarkPosition,
    "WatermarkPosition",
    "Where the watermark sits: vertical-horizontal.",
    [
        "top-left",
        "top-center",
        "top-right",
        "middle-left",
        "middle-center",
        "middle-right",
        "bottom-left",
        "bottom-center",
        "bottom-right"
    ]
);
string_enum!(
    ProjectState,
    "ProjectState",
    "Processing state of a project (`status` is its localized text).",
    [
        "queued",
        "downloading",
        "transcribing",
        "cutting",
        "captioning",
        "completed",
        "failed",
        "cancelled"
    ]
);
string_enum!(
    ProjectStatusText,
    "ProjectStatusText",
    "The project's state as shown to users (pt-BR): queued, processing, finished, failed, cancelled.",
    ["Na fila", "Processando", "Concluído", "Falhou", "Cancelado"]
);
string_enum!(
    ProjectEventType,
    "ProjectEventType",
    "What a processing event reports.",
    [
        "progress",
        "clip",
        "completed",
        "failed",
        "cancelled",
        "render"
    ]
);
string_enum!(
    PostStatus,
    "PostStatus",
    "State of a scheduled post.",
    ["pending", "publishing", "published", "failed"]
);
string_enum!(
    NotificationType,
    "NotificationType",
    "What a notification is about.",
    [
        "project_completed",
        "project_failed",
        "post_published",
        "post_failed",
        "plan_changed",
        "credits_low",
        "payment_failed",
        "webhook_disabled",
        "clip_rendered"
    ]
);
string_enum!(
    WebhookEventType,
    "WebhookEventType",
    "What a webhook event reports. `webhook.test` is sent only by `testWebhook` and cannot be subscribed to.",
    [
        "project.completed",
        "project.failed",
        "clip.rendered",
        "post.published",
        "post.failed",
        "credits.low",
        "webhook.test"
    ]
);
string_enum!(
    DeliveryStatus,
    "DeliveryStatus",
    "Where a webhook delivery stands: `pending` (waiting for its next attempt), `delivered` (answered 2xx), `failed` (given up after 24 hours of failures, or its webhook was disabled).",
    ["pending", "delivered", "failed"]
);
string_enum!(
    WebhookResult,
    "WebhookResult",
    "What a Stripe event did.",
    ["changed", "unchanged", "duplicate", "ignored"]
);
string_enum!(
    LedgerEntryType,
    "LedgerEntryType",
    "What a ledger entry records.",
    ["grant", "renew", "bonus", "reserve", "charge", "release"]
);

/// A body field documented as `T` (and as required when `REQUIRED`) whose
/// JSON the handler checks itself, so that a missing or mistyped value is
/// refused with an error that names the field (as the scheduling rules do).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Checked<T, const REQUIRED: bool = false>(pub Option<Value>, std::marker::PhantomData<T>);

impl<T, const REQUIRED: bool> Checked<T, REQUIRED> {
    /// A given value (for examples).
    pub fn of(v: Value) -> Self {
        Self(Some(v), std::marker::PhantomData)
    }

    /// The value, `None` when missing or `null`.
    pub fn value(&self) -> Option<&Value> {
        self.0.as_ref().filter(|v| !v.is_null())
    }
}

impl<T: Type, const REQUIRED: bool> Type for Checked<T, REQUIRED> {
    const IS_REQUIRED: bool = REQUIRED;
    type RawValueType = Value;
    type RawElementValueType = Value;

    fn name() -> Cow<'static, str> {
        T::name()
    }

    fn schema_ref() -> MetaSchemaRef {
        T::schema_ref()
    }

    fn register(registry: &mut Registry) {
        T::register(registry);
    }

    fn as_raw_value(&self) -> Option<&Value> {
        self.0.as_ref()
    }

    fn raw_element_iter<'a>(&'a self) -> Box<dyn Iterator<Item = &'a Value> + 'a> {
        Box::new(self.0.iter())
    }

    fn is_none(&self) -> bool {
        self.0.is_none()
    }
}

impl<T: Type, const REQUIRED: bool> ParseFromJSON for Checked<T, REQUIRED> {
    fn parse_from_json(value: Option<Value>) -> ParseResult<Self> {
        Ok(Self(value, std::marker::PhantomData))
    }
}

impl<T: Type, const REQUIRED: bool> ToJSON for Checked<T, REQUIRED> {
    fn to_json(&self) -> Option<Value> {
        self.0.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_strings_parse() {
        assert_eq!(
            Text::parse_from_json(Some(Value::String("a".into()))).unwrap(),
            Text("a".into())
        );
        assert!(Text::parse_from_json(Some(serde_json::json!(12))).is_err());
        assert!(Email::parse_from_json(Some(serde_json::json!(true))).is_err());
        assert!(Email::parse_from_json(None).is_err());
    }

    #[test]
    fn formats_are_declared() {
        let MetaSchemaRef::Inline(s) = DateTime::schema_ref() else {
            panic!("inline schema expected")
        };
        assert_eq!((s.ty, s.format), ("string", Some("date-time")));
    }

    /// The enums list what the engine writes.
    #[test]
    fn enums_match_the_engine() {
        use clipforge_actors::accounts::Plan as P;
        use clipforge_actors::posts::Provider as Pr;
        let plans: Vec<&str> = P::ALL.iter().map(|p| p.as_str()).collect();
        assert_eq!(plans, Plan::VALUES);
        let providers: Vec<&str> = Pr::ALL.iter().map(|p| p.as_str()).collect();
        assert_eq!(providers, Provider::VALUES);
        assert_eq!(
            clipforge_actors::captions::template::ANIMATIONS.as_slice(),
            Animation::VALUES
        );
    }
}
string_enum!(
    ExportFormat,
    "ExportFormat",
    "An editor export: FCPXML 1.10, CMX3600 EDL, OpenTimelineIO JSON, or a ZIP of the clips, subtitles, clips.json and the three timelines.",
    ["fcpxml", "edl", "otio", "zip"]
);
string_enum!(
    KeyScope,
    "KeyScope",
    "What an API key may do: `read` (GET operations), `write` (projects, uploads, caption templates, notifications), `publish` (platform connections and scheduling). The account, billing and the keys themselves need a signed-in session.",
    ["read", "write", "publish"]
);
