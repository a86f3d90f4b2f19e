//! The MCP tools: each is one operation of the REST API, named by its
//! `operationId`; its input schema is built from the same OpenAPI document
//! the API serves (path and query parameters plus the request body's
//! fields, `$ref`s inlined), so a tool accepts exactly what the operation
//! does and the server checks it the same way.

use std::sync::{Arc, OnceLock};

use serde_json::{json, Map, Value};

/// `(tool name, operationId, what the tool is for)`.
const TOOLS: &[(&str, &str, &str)] = &[
    (
        "create_project",
        "createProject",
        "Start clipping a video: give `sourceUrl` (a YouTube or Vimeo link) or `fileKey` (from POST /api/upload), optionally a title, clip length preset, layout, aspect ratio, caption template, language and a prompt of what the clips should be about. Answers with the project id; processing runs in the background (follow it with get_project).",
    ),
    (
        "get_project",
        "getProject",
        "A project with its state, progress and, once completed, its clips: titles, scores, transcript and media links (video, thumbnail, SRT, VTT).",
    ),
    (
        "list_projects",
        "listProjects",
        "The account's projects, newest first (page and limit).",
    ),
    (
        "edit_clip",
        "editClip",
        "Fix a clip of a completed project: its title (saved at once), or its range in the source (startSec/endSec), misheard caption words (words: [{index, text}], indices from the clip's word list), layout, aspect ratio, caption template or the crop per span (reframe: [{fromSec, toSec, x or faceId}], face ids from the clip's faces) — those render a new version in the background (status `rendering`, then `ready`; follow it with get_project).",
    ),
    (
        "find_more_clips",
        "findMoreClips",
        "Add the next best clips (count 1–5) of a completed project, chosen from its kept transcript without transcribing again and overlapping none of its clips; they render in the background (follow them with get_project).",
    ),
    (
        "list_integrations",
        "listIntegrations",
        "The connected platform accounts (TikTok, Instagram, YouTube) and which can be connected.",
    ),
    (
        "schedule_clip",
        "scheduleClip",
        "Schedule a clip for publication on a connected platform at a time within the next 365 days.",
    ),
    (
        "get_credits",
        "getCredits",
        "The plan and credits: available, total, reserved by projects still processing, and when they renew.",
    ),
];

/// Path parameters by friendlier names in tool arguments.
const ALIASES: &[(&str, &str)] = &[("id", "projectId"), ("clip_id", "clipId")];

fn alias(name: &str) -> &str {
    ALIASES
        .iter()
        .find(|(p, _)| *p == name)
        .map_or(name, |(_, a)| a)
}

/// One tool: the operation it calls and its input schema.
#[derive(Debug)]
pub struct ToolSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub method: http::Method,
    /// The API path under `/api`, with `{param}` placeholders.
    pub path: String,
    pub path_params: Vec<String>,
    pub query_params: Vec<String>,
    /// Fields of the JSON body (none: no body).
    pub body_fields: Option<Vec<String>>,
    pub schema: Arc<Map<String, Value>>,
}

static ALL: OnceLock<Vec<ToolSpec>> = OnceLock::new();

/// Builds the tools from the API's OpenAPI document (JSON), once; the
/// server and `clipforge mcp` call it before serving.
pub fn init(document: &str) {
    ALL.get_or_init(|| {
        let doc: Value = serde_json::from_str(document).expect("the document is JSON");
        TOOLS
            .iter()
            .map(|(name, op, description)| {
                build(&doc, name, op, description)
                    .unwrap_or_else(|| panic!("operation {op} not in the document"))
            })
            .collect()
    });
}

/// The tools ([`init`] first; none before).
pub fn all() -> &'static [ToolSpec] {
    ALL.get().map(Vec::as_slice).unwrap_or(&[])
}

fn build(doc: &Value, name: &'static str, op: &str, description: &'static str) -> Option<ToolSpec> {
    let (path, method, operation) = doc["paths"].as_object()?.iter().find_map(|(path, ops)| {
        ops.as_object()?.iter().find_map(|(method, o)| {
            (o["operationId"] == op).then(|| (path.clone(), method.clone(), o))
        })
    })?;
    let mut properties = Map::new();
    let mut required = Vec::new();
    let (mut path_params, mut query_params) = (Vec::new(), Vec::new());
    for p in operation["parameters"].as_array().into_iter().flatten() {
        let pname = p["name"].as_str()?;
        let mut schema = inline(doc, &p["schema"], 0);
        if let Some(d) = p["description"].as_str() {
            schema["description"] = d.into();
        }
        let arg = alias(pname).to_string();
        if p["in"] == "path" {
            path_params.push(pname.to_string());
            required.push(Value::from(arg.clone()));
        } else if p["in"] == "query" {
            query_params.push(pname.to_string());
        } else {
            continue;
        }
        properties.insert(arg, schema);
    }
    let body = operation["requestBody"]["content"]
        .as_object()
        .and_then(|c| c.values().next())
        .map(|media| inline(doc, &media["schema"], 0));
    let body_fields = body.map(|b| {
        let fields: Vec<String> = b["properties"]
            .as_object()
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        for (k, v) in b["properties"].as_object().into_iter().flatten() {
            properties.insert(k.clone(), v.clone());
        }
        required.extend(b["required"].as_array().cloned().unwrap_or_default());
        fields
    });
    let mut schema = Map::new();
    schema.insert("type".into(), "object".into());
    schema.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        schema.insert("required".into(), Value::Array(required));
    }
    schema.insert("additionalProperties".into(), false.into());
    Some(ToolSpec {
        name,
        description,
        method: method.to_uppercase().parse().ok()?,
        path,
        path_params,
        query_params,
        body_fields,
        schema: Arc::new(schema),
    })
}

/// `schema` with every `$ref` replaced by the schema it names.
fn inline(doc: &Value, schema: &Value, depth: usize) -> Value {
    if depth > 16 {
        return json!({});
    }
    match schema {
        Value::Object(o) => {
            if let Some(r) = o.get("$ref").and_then(Value::as_str) {
                let name = r.rsplit('/').next().unwrap_or_default();
                let mut target = inline(doc, &doc["components"]["schemas"][name], depth + 1);
                // Keep what the reference site adds (a description).
                if let (Value::Object(t), Some(d)) = (&mut target, o.get("description")) {
                    t.insert("description".into(), d.clone());
                }
                return target;
            }
            let mut out = Map::new();
            for (k, v) in o {
                match (k.as_str(), v) {
                    // A map of field names to schemas: every name stays.
                    ("properties", Value::Object(fields)) => {
                        let fields = fields
                            .iter()
                            .map(|(name, s)| (name.clone(), inline(doc, s, depth + 1)))
                            .collect();
                        out.insert(k.clone(), Value::Object(fields));
                    }
                    // A schema's own title and example are not input.
                    ("title" | "example", _) => {}
                    _ => {
                        out.insert(k.clone(), inline(doc, v, depth + 1));
                    }
                }
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(|v| inline(doc, v, depth + 1)).collect()),
        other => other.clone(),
    }
}

/// Why a tool's arguments make no request.
#[derive(Debug, thiserror::Error)]
pub enum ArgumentError {
    #[error("`{0}` is required")]
    Missing(String),
    #[error("unknown argument `{0}`")]
    Unknown(String),
}

/// The request a call of `tool` with `args` makes: method, path and query
/// under `/api`, and the JSON body. An error names a missing argument.
pub fn request(
    tool: &ToolSpec,
    args: &Map<String, Value>,
) -> Result<(http::Method, String, Option<Value>), ArgumentError> {
    let mut path = format!("/api{}", tool.path);
    for p in &tool.path_params {
        let arg = alias(p);
        let v = match args.get(arg) {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => return Err(ArgumentError::Missing(arg.to_string())),
        };
        let enc = percent_encoding::utf8_percent_encode(&v, percent_encoding::NON_ALPHANUMERIC);
        path = path.replace(&format!("{{{p}}}"), &enc.to_string());
    }
    let query: Vec<String> = tool
        .query_params
        .iter()
        .filter_map(|q| {
            let v = match args.get(q)? {
                Value::String(s) => s.clone(),
                Value::Null => return None,
                other => other.to_string(),
            };
            let enc = percent_encoding::utf8_percent_encode(&v, percent_encoding::NON_ALPHANUMERIC);
            Some(format!("{q}={enc}"))
        })
        .collect();
    if !query.is_empty() {
        path = format!("{path}?{}", query.join("&"));
    }
    let body = tool.body_fields.as_ref().map(|fields| {
        Value::Object(
            args.iter()
                .filter(|(k, _)| fields.contains(k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        )
    });
    let known = |k: &String| {
        tool.path_params.iter().any(|p| alias(p) == k)
            || tool.query_params.contains(k)
            || tool.body_fields.as_ref().is_some_and(|f| f.contains(k))
    };
    if let Some(k) = args.keys().find(|k| !known(k)) {
        return Err(ArgumentError::Unknown(k.clone()));
    }
    Ok((tool.method.clone(), path, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_come_from_the_document() {
        // The committed document (tests/openapi.rs: the one the server serves).
        init(include_str!("../../openapi/openapi.json"));
        let tools = all();
        assert_eq!(tools.len(), TOOLS.len());
        let create = tools.iter().find(|t| t.name == "create_project").unwrap();
        assert_eq!(create.method, http::Method::POST);
        let props = create.schema["properties"].as_object().unwrap();
        assert!(props.contains_key("sourceUrl") && props.contains_key("fileKey"));
        assert!(!serde_json::to_string(&*create.schema)
            .unwrap()
            .contains("$ref"));
        let edit = tools.iter().find(|t| t.name == "edit_clip").unwrap();
        let args = json!({"projectId": "p 1", "clipId": "c", "title": "New"});
        let (m, path, body) = request(edit, args.as_object().unwrap()).unwrap();
        assert_eq!(
            (m, path.as_str()),
            (http::Method::PATCH, "/api/projects/p%201/clips/c")
        );
        assert_eq!(body, Some(json!({"title": "New"})));
        let err = request(edit, json!({"clipId": "c"}).as_object().unwrap())
            .unwrap_err()
            .to_string();
        assert!(err.contains("projectId"), "{err}");
        let list = tools.iter().find(|t| t.name == "list_projects").unwrap();
        let (_, path, body) = request(list, json!({"limit": 5}).as_object().unwrap()).unwrap();
        assert_eq!((path.as_str(), body), ("/api/projects?limit=5", None));
        assert!(request(list, json!({"nope": 1}).as_object().unwrap()).is_err());
    }
}
