//! Editor export: a project's clips as a timeline an editor opens —
//! FCPXML 1.10 (Final Cut Pro, DaVinci Resolve), CMX3600 EDL (every NLE) and
//! OpenTimelineIO JSON. Each clip is placed back to back on the timeline with
//! its in/out in the *source* video, so the editor re-cuts from the original
//! at full quality; the captions are a track of their own (FCPXML captions,
//! an OTIO caption track, EDL locators). A clip whose filler words were
//! cut out (`stages::fillers`) is placed as its whole source range, fillers
//! included (the editor trims them if it wants to); its captions, timed on
//! the cut clip, are moved back onto the source's words.
//!
//! Pure functions of a [`Timeline`]; the service and `clipforge clip
//! --export` build one from their records.

pub mod bundle;
mod edl;
mod fcpxml;
mod otio;
pub mod stored;
mod timeline;

use std::path::{Path, PathBuf};

use super::stages::caption::RenderedClip;
use super::stages::fillers::to_source_offset;
use crate::media::ffprobe::MediaInfo;
use crate::transcript::sentences_from_words;

pub use edl::to_edl;
pub use fcpxml::to_fcpxml;
pub use otio::to_otio;
pub use timeline::{CaptionLine, ExportClip, FrameRate, SourceInfo, Timeline};

/// The formats `GET /api/projects/:id/export` and `clipforge clip --export` write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    Fcpxml,
    Edl,
    Otio,
}

impl ExportFormat {
    pub const ALL: [ExportFormat; 3] =
        [ExportFormat::Fcpxml, ExportFormat::Edl, ExportFormat::Otio];

    pub fn extension(self) -> &'static str {
        match self {
            ExportFormat::Fcpxml => "fcpxml",
            ExportFormat::Edl => "edl",
            ExportFormat::Otio => "otio",
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            ExportFormat::Fcpxml => "application/xml",
            ExportFormat::Edl => "text/plain; charset=utf-8",
            ExportFormat::Otio => "application/json",
        }
    }

    pub fn render(self, t: &Timeline) -> String {
        match self {
            ExportFormat::Fcpxml => to_fcpxml(t),
            ExportFormat::Edl => to_edl(t),
            ExportFormat::Otio => to_otio(t),
        }
    }
}

/// The timeline of a `clipforge clip` run: `name` and `url` say where the
/// source is (a `file://` URL for a local file).
pub fn from_rendered(
    name: &str,
    url: &str,
    media: &MediaInfo,
    language: &str,
    clips: &[RenderedClip],
) -> Timeline {
    let video = media.video.as_ref();
    Timeline {
        name: name.to_string(),
        language: language.to_string(),
        source: SourceInfo {
            name: name.to_string(),
            url: url.to_string(),
            duration: media.duration,
            fps: video.map(|v| v.fps).unwrap_or(0.0),
            width: video.map(|v| v.width).unwrap_or(0),
            height: video.map(|v| v.height).unwrap_or(0),
        },
        clips: clips
            .iter()
            .map(|c| ExportClip {
                index: c.index as u32,
                title: c.plan.title.clone(),
                start: c.plan.start,
                end: c.plan.end,
                captions: sentences_from_words(&c.words)
                    .into_iter()
                    // Words are on the cut clip's timeline; the timeline
                    // places the whole source range (filler cuts included).
                    .map(|s| CaptionLine {
                        start: to_source_offset(&c.plan.cuts, c.plan.start, s.start),
                        end: to_source_offset(&c.plan.cuts, c.plan.start, s.end),
                        text: s.text,
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// Writes `project.fcpxml`, `project.edl` and `project.otio` into `dir`.
pub fn write_all(dir: &Path, t: &Timeline) -> std::io::Result<Vec<PathBuf>> {
    ExportFormat::ALL
        .iter()
        .map(|f| {
            let path = dir.join(format!("project.{}", f.extension()));
            std::fs::write(&path, f.render(t))?;
            Ok(path)
        })
        .collect()
}

/// `file://` URL of a local path (percent-encoded).
pub fn file_url(path: &Path) -> String {
    let abs = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let s = abs.to_string_lossy();
    let encoded: String = percent_encoding::utf8_percent_encode(&s, &PATH_SET).collect();
    format!("file://{encoded}")
}

const PATH_SET: percent_encoding::AsciiSet = percent_encoding::NON_ALPHANUMERIC
    .remove(b'/')
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

#[cfg(test)]
mod tests;
