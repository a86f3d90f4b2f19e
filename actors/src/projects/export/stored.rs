//! Editor export of a finished project: its clips as an FCPXML, EDL or OTIO
//! timeline over the source video, or everything as one ZIP
//! (`GET /api/projects/:id/export`). The caption stage stores what the
//! timelines need to know about the source (`projects/<id>/source.json`,
//! removed with the project's other media).

use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::bundle::{self, Entry};
use super::{CaptionLine, ExportClip, ExportFormat, SourceInfo, Timeline};
use crate::media::ffprobe::MediaInfo;
use crate::projects::records::{self, ClipRecord, ProjectRecord, ProjectState, Source};
use crate::projects::stages::fillers::to_source_offset;
use crate::storage::kv::KvStore;
use crate::storage::objects::ObjectStore;

/// What the caller asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportRequest {
    Timeline(ExportFormat),
    /// Clips, thumbnails, subtitles, `clips.json` and the three timelines.
    Zip,
}

pub enum ExportBody {
    Text(String),
    /// An unlinked temp file, rewound, and its size.
    File(std::fs::File, u64),
}

pub struct ExportFile {
    pub file_name: String,
    pub content_type: &'static str,
    pub body: ExportBody,
}

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("the project is not finished ({}): only a finished project can be exported", .0.as_str())]
    NotFinished(ProjectState),
    #[error("{0}")]
    Storage(String),
}

/// The source as the caption stage saw it.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredSource {
    pub source: SourceInfo,
    pub language: String,
}

pub fn source_key(project_id: &str) -> String {
    format!("projects/{project_id}/source.json")
}

/// What the user knows the source by: the upload's file name or the URL.
fn source_name(p: &ProjectRecord) -> String {
    match &p.source {
        Source::Url(u) => u.clone(),
        Source::Upload(k) => k.rsplit('/').next().unwrap_or("upload").to_string(),
    }
}

/// Called by the caption stage with the probed source.
pub fn stored_source(p: &ProjectRecord, media: &MediaInfo, language: &str) -> StoredSource {
    let name = source_name(p);
    let video = media.video.as_ref();
    StoredSource {
        source: SourceInfo {
            url: name.clone(),
            name,
            duration: media.duration,
            fps: video.map(|v| v.fps).unwrap_or(0.0),
            width: video.map(|v| v.width).unwrap_or(0),
            height: video.map(|v| v.height).unwrap_or(0),
        },
        language: language.to_string(),
    }
}

/// The timeline of a project's clips. Without a stored source (a project
/// finished before exports existed) the rate is 30 fps, the size 1920×1080
/// and the duration the last clip's end.
pub fn timeline(p: &ProjectRecord, clips: &[ClipRecord], stored: Option<StoredSource>) -> Timeline {
    let stored = stored.unwrap_or_else(|| StoredSource {
        source: SourceInfo {
            name: source_name(p),
            url: source_name(p),
            duration: clips.iter().map(|c| c.end).fold(0.0, f64::max),
            fps: 30.0,
            width: 1920,
            height: 1080,
        },
        language: "en".into(),
    });
    Timeline {
        name: p.title.clone(),
        language: stored.language,
        source: stored.source,
        clips: clips
            .iter()
            .map(|c| ExportClip {
                index: c.index,
                title: c.title.clone(),
                start: c.start,
                end: c.end,
                captions: c
                    .segments
                    .iter()
                    // Segments are on the cut clip's timeline; the timeline
                    // places the whole source range (`fillers` cuts included).
                    .map(|s| CaptionLine {
                        start: to_source_offset(&c.cuts, c.start, s.start),
                        end: to_source_offset(&c.cuts, c.start, s.end),
                        text: s.text.clone(),
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// A file name from the project's title: ASCII letters, digits and dashes.
fn slug(title: &str) -> String {
    let mut s = String::new();
    for c in title.chars() {
        if c.is_ascii_alphanumeric() {
            s.push(c.to_ascii_lowercase());
        } else if !s.is_empty() && !s.ends_with('-') {
            s.push('-');
        }
        if s.len() >= 60 {
            break;
        }
    }
    let s = s.trim_end_matches('-').to_string();
    if s.is_empty() {
        "project".into()
    } else {
        s
    }
}

/// `clips.json` inside the ZIP: each clip with its files and lines.
fn clips_json(clips: &[ClipRecord]) -> Vec<u8> {
    let list: Vec<_> = clips
        .iter()
        .map(|c| {
            let base = format!("clips/clip-{}", c.index);
            serde_json::json!({
                "index": c.index,
                "title": c.title,
                "score": c.score,
                "reason": c.reason,
                "scores": c.scores,
                "startSec": c.start,
                "endSec": c.end,
                "duration": records::duration_display(c.duration()),
                "quality": c.quality,
                "video": format!("{base}.mp4"),
                "subtitleSrt": format!("{base}.srt"),
                "subtitleVtt": format!("{base}.vtt"),
                "thumbnail": format!("{base}.jpg"),
                "transcripts": c.segments.iter().map(|s| serde_json::json!({
                    "start": s.start, "end": s.end, "text": s.text,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    serde_json::to_vec_pretty(&list).unwrap_or_default()
}

/// Where an export reads from: the project's clips (`kv`), their files and
/// the stored source (`objects`), and the folder its temp files go in.
pub struct ExportFrom<'a> {
    pub kv: &'a Arc<dyn KvStore>,
    pub objects: &'a dyn ObjectStore,
    pub tmp_root: &'a Path,
}

impl ExportFrom<'_> {
    /// A finished project's export; 409-worthy `NotFinished` otherwise.
    pub async fn export(
        &self,
        p: &ProjectRecord,
        what: ExportRequest,
    ) -> Result<ExportFile, ExportError> {
        if p.state != ProjectState::Completed {
            return Err(ExportError::NotFinished(p.state));
        }
        let clips = records::load_clips_async(self.kv.as_ref(), &p.id)
            .await
            .map_err(|e| ExportError::Storage(format!("loading clips: {e}")))?
            .into_iter()
            .filter(ClipRecord::playable)
            .collect::<Vec<_>>();
        // Absent for projects finished before exports existed.
        let stored = match self.objects.get_bytes(&source_key(&p.id)).await {
            Ok(bytes) => serde_json::from_slice(&bytes).ok(),
            Err(_) => None,
        };
        let timeline = timeline(p, &clips, stored);
        let name = slug(&p.title);
        match what {
            ExportRequest::Timeline(f) => Ok(ExportFile {
                file_name: format!("{name}.{}", f.extension()),
                content_type: f.content_type(),
                body: ExportBody::Text(f.render(&timeline)),
            }),
            ExportRequest::Zip => {
                let (file, size) = self.zip(&timeline, &clips).await?;
                Ok(ExportFile {
                    file_name: format!("{name}.zip"),
                    content_type: "application/zip",
                    body: ExportBody::File(file, size),
                })
            }
        }
    }

    /// Fetches every clip's files into a temp folder under the data dir and
    /// writes the archive (both gone when this returns or fails).
    async fn zip(
        &self,
        timeline: &Timeline,
        clips: &[ClipRecord],
    ) -> Result<(std::fs::File, u64), ExportError> {
        let tmp_root = self.tmp_root;
        std::fs::create_dir_all(tmp_root)
            .map_err(|e| ExportError::Storage(format!("creating a temp folder: {e}")))?;
        let dir = tempfile::Builder::new()
            .prefix("export-")
            .tempdir_in(tmp_root)
            .map_err(|e| ExportError::Storage(format!("creating a temp folder: {e}")))?;
        let mut entries = Vec::new();
        for c in clips {
            for (key, ext) in [
                (&c.video_key, "mp4"),
                (&c.thumbnail_key, "jpg"),
                (&c.subtitle_key, "srt"),
                (&c.vtt_key, "vtt"),
            ] {
                let name = format!("clips/clip-{}.{ext}", c.index);
                let path = dir.path().join(format!("clip-{}.{ext}", c.index));
                self.objects
                    .get_to_file(key, &path)
                    .await
                    .map_err(|e| ExportError::Storage(format!("fetching {name}: {e}")))?;
                entries.push(Entry::File { name, path });
            }
        }
        entries.push(Entry::Bytes {
            name: "clips.json".into(),
            bytes: clips_json(clips),
        });
        for f in ExportFormat::ALL {
            entries.push(Entry::Bytes {
                name: format!("project.{}", f.extension()),
                bytes: f.render(timeline).into_bytes(),
            });
        }
        let at = dir.path().to_path_buf();
        let out = crate::tasks::blocking(move || bundle::write_zip(&at, &entries))
            .await
            .map_err(|e| ExportError::Storage(format!("writing the archive: {e}")))?;
        drop(dir);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_plain_ascii() {
        assert_eq!(slug("Why Videos Go Viral?!"), "why-videos-go-viral");
        assert_eq!(slug("Ação — 2"), "a-o-2");
        assert_eq!(slug("???"), "project");
    }
}
