//! The uniform error body, `{"error": "<snake_case>", "message": "..."}`,
//! for responses built outside the typed API (middleware, limits, admin
//! and cluster routes). A leaf module: it imports nothing of the crate, so
//! everything that answers an error can use it without an import circle.

use poem::http::StatusCode;
use poem::Response;

pub fn error_response(status: StatusCode, code: &str, message: &str) -> Response {
    Response::builder()
        .status(status)
        .content_type("application/json; charset=utf-8")
        .body(serde_json::json!({ "error": code, "message": message }).to_string())
}
