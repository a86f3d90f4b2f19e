//! The MCP server (issue 31), on the official Rust SDK (`rmcp`): tools
//! that are the REST API's own operations ([`tools`]), for agents.
//!
//! Two transports, one handler: `/mcp` on the server (streamable HTTP,
//! [`http`]) calls this node's routes in process with the caller's API key
//! and address, so every tool call meets the same authentication, scopes,
//! rate limits, cluster routing and validation as a REST request;
//! `clipforge mcp` (stdio, for desktop agents) calls a server's REST API
//! over HTTP with the key in `CLIPFORGE_API_KEY`.

pub mod http;
pub mod tools;

use std::sync::Arc;

use poem::Endpoint;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;

use crate::security::CLIENT_IP;

/// Where a tool's request goes.
pub enum Backend {
    /// This node's routes, in process, as the `/mcp` caller (its
    /// `Authorization` and resolved address, from the HTTP request).
    Local,
    /// A server's REST API over HTTP (`clipforge mcp`).
    Remote {
        base: String,
        key: String,
        client: reqwest::Client,
    },
}

/// Why a tool call reached no answer from the API.
#[derive(Debug, thiserror::Error)]
enum SendError {
    #[error("no HTTP request behind this call")]
    NoRequest,
    #[error("the server is starting")]
    Starting,
    #[error("{0}")]
    Body(serde_json::Error),
    /// This node's answer could not be read.
    #[error("{0}")]
    Answer(poem::error::ReadBodyError),
    #[error("cannot reach {base}: {source}")]
    Unreachable {
        base: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("{0}")]
    Read(reqwest::Error),
}

/// The MCP handler.
#[derive(Clone)]
pub struct Clipforge {
    backend: Arc<Backend>,
}

impl Clipforge {
    pub fn new(backend: Backend) -> Self {
        Self {
            backend: Arc::new(backend),
        }
    }

    /// Sends one API request; `(status, JSON body)`.
    async fn send(
        &self,
        ctx: &RequestContext<RoleServer>,
        method: ::http::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<(u16, Value), SendError> {
        match &*self.backend {
            Backend::Local => {
                let parts = ctx
                    .extensions
                    .get::<::http::request::Parts>()
                    .ok_or(SendError::NoRequest)?;
                let ep = crate::cluster::local_endpoint().ok_or(SendError::Starting)?;
                let mut req = poem::Request::builder().method(method).uri_str(path);
                for name in [::http::header::AUTHORIZATION.as_str(), CLIENT_IP] {
                    if let Some(v) = parts.headers.get(name) {
                        req = req.header(name, v.clone());
                    }
                }
                let req = match body {
                    Some(b) => req
                        .content_type("application/json")
                        .body(poem::Body::from_json(b).map_err(SendError::Body)?),
                    None => req.finish(),
                };
                let resp = match ep.call(req).await {
                    Ok(r) => r,
                    Err(e) => e.into_response(),
                };
                let status = resp.status().as_u16();
                let bytes = resp
                    .into_body()
                    .into_bytes()
                    .await
                    .map_err(SendError::Answer)?;
                Ok((
                    status,
                    serde_json::from_slice(&bytes).unwrap_or(Value::Null),
                ))
            }
            Backend::Remote { base, key, client } => {
                let mut req = client
                    .request(method, format!("{base}{path}"))
                    .bearer_auth(key);
                if let Some(b) = body {
                    req = req.json(&b);
                }
                let resp = req.send().await.map_err(|source| SendError::Unreachable {
                    base: base.clone(),
                    source,
                })?;
                let status = resp.status().as_u16();
                let bytes = resp.bytes().await.map_err(SendError::Read)?;
                Ok((
                    status,
                    serde_json::from_slice(&bytes).unwrap_or(Value::Null),
                ))
            }
        }
    }
}

fn failed(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

impl ServerHandler for Clipforge {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("clipforge", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Clipforge turns long videos into captioned short clips. Create a project \
                 from a video link (create_project), follow it with get_project until its \
                 state is completed, then read its clips, fix one (edit_clip: title, range, \
                 caption words, layout), ask for more (find_more_clips) or schedule \
                 it to a connected platform (list_integrations, schedule_clip). Every tool \
                 acts as the API key's account, within the key's scopes.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let result = ListToolsResult {
            tools: tools::all()
                .iter()
                .map(|t| Tool::new(t.name, t.description, t.schema.clone()))
                .collect(),
            ..ListToolsResult::default()
        };
        Ok(result)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(tool) = tools::all().iter().find(|t| t.name == request.name) else {
            return Err(ErrorData::invalid_params(
                format!("no tool named {:?}", request.name),
                None,
            ));
        };
        let args = request.arguments.unwrap_or_default();
        let (method, path, body) = match tools::request(tool, &args) {
            Ok(r) => r,
            Err(e) => return Err(ErrorData::invalid_params(e.to_string(), None)),
        };
        let result = match self.send(&context, method, &path, body).await {
            Ok((status, value)) if (200..300).contains(&status) => {
                let text = serde_json::to_string_pretty(&value).unwrap_or_default();
                CallToolResult::success(vec![ContentBlock::text(text)])
            }
            // The API's uniform error body, in words.
            Ok((status, value)) => failed(format!(
                "{status} {}: {}",
                value["error"].as_str().unwrap_or("error"),
                value["message"].as_str().unwrap_or("the request failed")
            )),
            Err(e) => failed(e.to_string()),
        };
        Ok(result.into())
    }
}
