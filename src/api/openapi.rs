//! The published OpenAPI document: poem-openapi's, plus what it cannot
//! derive: OpenAPI links between operations (which response field feeds
//! which later request, used by clients and by schemathesis' stateful
//! tests). Also the `Allow` header of a 405, from the document's paths.

use serde_json::{json, Map, Value};

/// `(operation, status, link name, target operation, parameters)`: the
/// target's parameters are runtime expressions on the source's response.
type Link = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);

/// The response links the document declares.
const LINKS: &[Link] = &[
    (
        "createProject",
        "201",
        "GetProject",
        "getProject",
        &[("id", "$response.body#/projectId")],
    ),
    (
        "createProject",
        "201",
        "ProjectStatus",
        "projectStatus",
        &[("id", "$response.body#/projectId")],
    ),
    (
        "createProject",
        "201",
        "CancelProject",
        "cancelProject",
        &[("id", "$response.body#/projectId")],
    ),
    (
        "createProject",
        "201",
        "DeleteProject",
        "deleteProject",
        &[("id", "$response.body#/projectId")],
    ),
    (
        "createProject",
        "201",
        "BulkSchedule",
        "bulkSchedule",
        &[("id", "$response.body#/projectId")],
    ),
    (
        "listProjects",
        "200",
        "GetFirstProject",
        "getProject",
        &[("id", "$response.body#/projects/0/id")],
    ),
    (
        "getProject",
        "200",
        "ScheduleFirstClip",
        "scheduleClip",
        &[("clip_id", "$response.body#/clips/0/id")],
    ),
    (
        "createCaptionTemplate",
        "201",
        "UpdateCaptionTemplate",
        "updateCaptionTemplate",
        &[("id", "$response.body#/id")],
    ),
    (
        "createCaptionTemplate",
        "201",
        "DeleteCaptionTemplate",
        "deleteCaptionTemplate",
        &[("id", "$response.body#/id")],
    ),
    (
        "listCaptionTemplates",
        "200",
        "UpdateFirstCaptionTemplate",
        "updateCaptionTemplate",
        &[("id", "$response.body#/templates/0/id")],
    ),
    (
        "listNotifications",
        "200",
        "ReadFirstNotification",
        "readNotification",
        &[("id", "$response.body#/notifications/0/id")],
    ),
    (
        "scheduleClip",
        "201",
        "GetScheduledPost",
        "getScheduledPost",
        &[("id", "$response.body#/id")],
    ),
    (
        "scheduleClip",
        "201",
        "ChangeScheduledPost",
        "changeScheduledPost",
        &[("id", "$response.body#/id")],
    ),
    (
        "scheduleClip",
        "201",
        "CancelScheduledPost",
        "cancelScheduledPost",
        &[("id", "$response.body#/id")],
    ),
    (
        "bulkSchedule",
        "200",
        "GetFirstScheduledPost",
        "getScheduledPost",
        &[("id", "$response.body#/scheduledPosts/0/id")],
    ),
    (
        "listScheduledPosts",
        "200",
        "GetFirstScheduledPost",
        "getScheduledPost",
        &[("id", "$response.body#/scheduledPosts/0/id")],
    ),
    (
        "connectIntegration",
        "200",
        "IntegrationCallback",
        "integrationCallback",
        &[
            ("provider", "$response.body#/provider"),
            ("state", "$response.body#/state"),
        ],
    ),
    (
        "connectIntegration",
        "200",
        "DisconnectIntegration",
        "disconnectIntegration",
        &[("provider", "$response.body#/provider")],
    ),
];

/// poem-openapi's document (`spec`, JSON) with the links added: the text
/// served at `/api/openapi.json` and written to `openapi/openapi.json`.
pub fn finish(spec: &str) -> String {
    let mut doc: Value = serde_json::from_str(spec).expect("poem-openapi writes valid JSON");
    add_links(&mut doc);
    event_stream_items(&mut doc);
    closed_objects(&mut doc);
    serde_json::to_string_pretty(&doc).expect("a JSON value serializes") + "\n"
}

/// Bodies that refuse fields they do not name (`deny_unknown_fields`):
/// poem-openapi does not say so in the schema, so a client (or
/// schemathesis) would take any extra field as valid.
const CLOSED: &[&str] = &["ClipEdit", "WordFix", "NewClip", "MoreClips", "ReframeSpan"];

fn closed_objects(doc: &mut Value) {
    for name in CLOSED {
        if let Some(schema) = doc["components"]["schemas"]
            .get_mut(*name)
            .and_then(Value::as_object_mut)
        {
            schema.insert("additionalProperties".into(), json!(false));
        }
    }
}

fn operations_mut(doc: &mut Value) -> impl Iterator<Item = &mut Map<String, Value>> {
    doc["paths"]
        .as_object_mut()
        .into_iter()
        .flat_map(|paths| paths.values_mut())
        .filter_map(Value::as_object_mut)
        .flat_map(|methods| methods.values_mut())
        .filter_map(Value::as_object_mut)
}

fn add_links(doc: &mut Value) {
    for op in operations_mut(doc) {
        let Some(id) = op
            .get("operationId")
            .and_then(Value::as_str)
            .map(str::to_string)
        else {
            continue;
        };
        for (from, status, name, target, params) in LINKS {
            if *from != id {
                continue;
            }
            let Some(response) = op
                .get_mut("responses")
                .and_then(|r| r.get_mut(*status))
                .and_then(Value::as_object_mut)
            else {
                continue;
            };
            let parameters: Map<String, Value> = params
                .iter()
                .map(|(k, v)| (k.to_string(), json!(v)))
                .collect();
            let links = response
                .entry("links")
                .or_insert_with(|| json!({}))
                .as_object_mut()
                .expect("links is an object");
            links.insert(
                name.to_string(),
                json!({ "operationId": target, "parameters": parameters }),
            );
        }
    }
}

/// poem-openapi documents an event stream as an array of its events; in
/// OpenAPI 3.0 the schema of `text/event-stream` is read as one event's
/// (as schemathesis validates it), so the item schema replaces the array.
fn event_stream_items(doc: &mut Value) {
    for op in operations_mut(doc) {
        for response in op
            .get_mut("responses")
            .and_then(Value::as_object_mut)
            .into_iter()
            .flat_map(|r| r.values_mut())
        {
            if let Some(media) = response.pointer_mut("/content/text~1event-stream") {
                if media["schema"]["format"] == "event-stream" {
                    media["schema"] = media["schema"]["items"].take();
                }
            }
        }
    }
}

/// The methods of the document's path that `path` (under `/api`) matches,
/// for the `Allow` header of a 405; `None` when no path matches.
pub fn allowed_methods(doc: &Value, path: &str) -> Option<String> {
    let path = path.strip_prefix("/api")?;
    let want: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    let paths = doc["paths"].as_object()?;
    for (template, methods) in paths {
        let have: Vec<&str> = template.trim_end_matches('/').split('/').collect();
        let matches = have.len() == want.len()
            && have
                .iter()
                .zip(&want)
                .all(|(t, s)| (t.starts_with('{') && !s.is_empty()) || t == s);
        if matches {
            let mut allowed: Vec<String> = methods
                .as_object()?
                .keys()
                .map(|m| m.to_ascii_uppercase())
                .collect();
            if allowed.iter().any(|m| m == "GET") {
                allowed.push("HEAD".into());
            }
            return Some(allowed.join(", "));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> Value {
        json!({"paths": {
            "/projects": {"get": {"operationId": "listProjects", "responses": {"200": {}}},
                          "post": {"operationId": "createProject", "responses": {"201": {}}}},
            "/projects/{id}": {"get": {"operationId": "getProject"}, "delete": {"operationId": "deleteProject"}},
        }})
    }

    #[test]
    fn allow_lists_the_path_methods() {
        let d = doc();
        assert_eq!(
            allowed_methods(&d, "/api/projects").as_deref(),
            Some("GET, POST, HEAD")
        );
        assert_eq!(
            allowed_methods(&d, "/api/projects/").as_deref(),
            Some("GET, POST, HEAD")
        );
        assert_eq!(
            allowed_methods(&d, "/api/projects/abc").as_deref(),
            Some("DELETE, GET, HEAD")
        );
        assert_eq!(allowed_methods(&d, "/api/nope"), None);
        assert_eq!(allowed_methods(&d, "/projects"), None);
    }

    #[test]
    fn an_event_stream_is_documented_by_its_event() {
        let spec = json!({"paths": {"/s": {"get": {"responses": {"200": {"content": {
            "text/event-stream": {"schema": {"type": "array", "format": "event-stream",
                                             "items": {"$ref": "#/components/schemas/E"}}}}}}}}}});
        let out: Value = serde_json::from_str(&finish(&spec.to_string())).unwrap();
        assert_eq!(
            out["paths"]["/s"]["get"]["responses"]["200"]["content"]["text/event-stream"]["schema"],
            json!({"$ref": "#/components/schemas/E"})
        );
    }

    #[test]
    fn links_are_added_to_the_source_response() {
        let out: Value = serde_json::from_str(&finish(&doc().to_string())).unwrap();
        let link = &out["paths"]["/projects"]["post"]["responses"]["201"]["links"]["GetProject"];
        assert_eq!(link["operationId"], "getProject");
        assert_eq!(link["parameters"]["id"], "$response.body#/projectId");
    }
}
