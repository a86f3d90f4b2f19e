//! Editor export of a finished project (`GET /api/projects/:id/export`).

use poem::Body;
use poem_openapi::param::{Path, Query};
use poem_openapi::payload::Attachment;
use poem_openapi::{ApiResponse, OpenApi, Tags};

use super::formats::ExportFormat;
use super::projects::owned_project;
use super::projects_types::status_text;
use super::{ApiError, ApiResult, Auth, State};
use clipforge_actors::projects::export::stored::{ExportBody, ExportError, ExportRequest};
use clipforge_actors::projects::export::ExportFormat as Format;
use poem::web::Data;

#[derive(Tags)]
enum Tag {
    /// Projects and their clips.
    Projects,
}

pub struct ExportApi;

#[derive(ApiResponse)]
enum ExportResponse {
    /// The timeline or archive, as a download (`Content-Disposition:
    /// attachment; filename=...`). `Content-Type` is the format's own
    /// (application/xml, text/plain, application/json, application/zip).
    #[oai(status = 200)]
    Ok(Attachment<Body>, #[oai(header = "Content-Type")] String),
}

fn request(format: &str) -> Option<ExportRequest> {
    Some(match format {
        "fcpxml" => ExportRequest::Timeline(Format::Fcpxml),
        "edl" => ExportRequest::Timeline(Format::Edl),
        "otio" => ExportRequest::Timeline(Format::Otio),
        "zip" => ExportRequest::Zip,
        _ => return None,
    })
}

#[OpenApi(prefix_path = "/projects", tag = "Tag::Projects")]
impl ExportApi {
    /// A finished project for a video editor: `fcpxml` (FCPXML 1.10), `edl`
    /// (CMX3600), `otio` (OpenTimelineIO JSON) — each clip placed back to
    /// back with its in/out in the source video and its captions as a track
    /// — or `zip` (every clip's MP4, thumbnail, SRT and VTT, `clips.json`
    /// and the three timelines). 409 while the project is not finished.
    #[oai(path = "/:id/export", method = "get", operation_id = "exportProject")]
    async fn export(
        &self,
        state: Data<&State>,
        auth: Auth,
        id: Path<String>,
        format: Query<ExportFormat>,
    ) -> ApiResult<ExportResponse> {
        let what = request(&format.0).ok_or_else(|| {
            ApiError::bad_request(
                "invalid_field",
                format!("format: one of {}", ExportFormat::VALUES.join(", ")),
            )
        })?;
        let p = owned_project(&state, &auth.user().account.id, &id.0).await?;
        let file = state
            .projects
            .export_project(&p, what)
            .await
            .map_err(|e| match e {
                ExportError::NotFinished(st) => ApiError::conflict(
                    "not_finished",
                    format!(
                        "the project is not finished ({}): only a finished project can be exported",
                        status_text(st)
                    ),
                ),
                ExportError::Storage(m) => ApiError::internal("exporting a project", m),
            })?;
        let body = match file.body {
            ExportBody::Text(s) => Body::from_string(s),
            ExportBody::File(f, _size) => Body::from_async_read(tokio::fs::File::from_std(f)),
        };
        Ok(ExportResponse::Ok(
            Attachment::new(body).filename(file.file_name),
            file.content_type.to_string(),
        ))
    }
}
