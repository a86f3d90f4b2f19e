//! The bodies of the project routes (contract 2.1–2.3, 4.3), and how a
//! stored project and clip become them.

use poem_openapi::types::Example;
use poem_openapi::{ApiResponse, Object};

use super::formats::{
    AspectRatio, ClipDurationPreset, ClipLayout, ClipStatus, Date, DateTime, ProjectEventType,
    ProjectState, ProjectStatusText, Text, Uri, Uuid,
};
use super::templates::TemplateStyle;
use clipforge_actors::projects::clip_history::RenderState;
use clipforge_actors::projects::events::ProjectEventBody;
use clipforge_actors::projects::records::{
    self as records, date_of, iso8601, ClipRecord, ProjectRecord, ProjectState as State, Source,
};
use clipforge_actors::projects::uploads::frame_key;
use clipforge_actors::storage::links::StableLinks;

/// The contract's localized status (pt-BR) of a project state. Localized
/// text exists only here, at the HTTP edge.
pub fn status_text(state: State) -> &'static str {
    match state {
        State::Queued => "Na fila",
        State::Downloading | State::Transcribing | State::Cutting | State::Captioning => {
            "Processando"
        }
        State::Completed => "Concluído",
        State::Failed => "Falhou",
        State::Cancelled => "Cancelado",
    }
}

/// An engine event's JSON `data`, with the localized `status` beside its
/// `state` (a clip event carries no state).
pub fn event_data(body: &ProjectEventBody) -> String {
    let mut data = body.data();
    if let (Some(state), serde_json::Value::Object(map)) = (body.state(), &mut data) {
        map.insert("status".into(), status_text(state).into());
    }
    data.to_string()
}

#[derive(Object)]
#[oai(rename_all = "camelCase", example)]
pub struct CreateProject {
    /// URL of a YouTube or Vimeo video (or `fileKey`, not both).
    #[oai(nullable, validator(max_length = 2048))]
    pub source_url: Option<Uri>,
    /// Key returned by `POST /upload` (or `sourceUrl`, not both).
    #[oai(nullable)]
    pub file_key: Option<Text>,
    /// Custom title (cut to 200 characters; default: the video's). No
    /// control or bidi override characters.
    #[oai(
        nullable,
        validator(pattern = r"^[^\x00-\x1F\x7F-\x9F\u202A-\u202E\u2066-\u2069]*$")
    )]
    pub title: Option<Text>,
    /// Thumbnail URL, http or https (default: the video's).
    #[oai(nullable, validator(max_length = 2048))]
    pub thumbnail: Option<Uri>,
    /// Seconds of the video to process, from the start (default: all of it).
    #[oai(nullable, validator(minimum(value = "0", exclusive = true)))]
    pub duration_sec: Option<f64>,
    /// Default `auto`: 20–60 s clips, shorter for a short video (down to
    /// 5 s or a third of its speech), and one clip of all the speech when
    /// it is shorter still. An explicit preset no clip fits fails the
    /// project with a message saying so.
    #[oai(nullable)]
    pub clip_duration_preset: Option<ClipDurationPreset>,
    /// Id or name of a saved template (names: case-insensitive, a saved
    /// name wins over a preset's), a preset name (default, shorts, karaoke,
    /// minimal, bold) or a JSON-encoded template.
    #[oai(nullable)]
    pub caption_template: Option<Text>,
    /// Only transcribe and caption; no cuts.
    #[oai(nullable)]
    pub skip_cuts: Option<bool>,
    /// Default `auto`: chosen per clip. Other values: 400 `invalid_field`.
    #[oai(nullable)]
    pub layout: Option<ClipLayout>,
    /// Default `9:16`. Other values: 400 `invalid_field`.
    #[oai(nullable)]
    pub aspect_ratio: Option<AspectRatio>,
    /// What the clips should be about, in the user's words ("the part about
    /// pricing"): moments that say the prompt's words (lower-cased, stemmed,
    /// stop words ignored) and phrases (quoted, or two words in a row) score
    /// higher — a clip's score becomes 60% its own and 40% its match. Also
    /// given to the re-ranker when the server has one. At most 500
    /// characters (400 `invalid_field` beyond); blank means none.
    #[oai(nullable)]
    pub prompt: Option<Text>,
    /// Cut filler words out of the clips' audio and video: um, uh, erm,
    /// er, ah, hmm, mm, and "you know" / "I mean" when set off by pauses or
    /// commas (a phrase that may carry meaning is kept). Captions,
    /// subtitles, transcripts and durations follow the cut clip. Default
    /// false.
    #[oai(nullable)]
    pub remove_fillers: Option<bool>,
    /// The spoken language, a Whisper language code (`en`, `pt`, `ko`,
    /// `zh`, …): transcription uses it as given. Default: detected from
    /// the speech, with the source's declared language (as `POST /meta`
    /// shows it) as a prior. Other values: 400.
    #[oai(
        nullable,
        validator(
            pattern = r"^(en|zh|de|es|ru|ko|fr|ja|pt|tr|pl|ca|nl|ar|sv|it|id|hi|fi|vi|he|uk|el|ms|cs|ro|da|hu|ta|no|th|ur|hr|bg|lt|la|mi|ml|cy|sk|te|fa|lv|bn|sr|az|sl|kn|et|mk|br|eu|is|hy|ne|mn|bs|kk|sq|sw|gl|mr|pa|si|km|sn|yo|so|af|oc|ka|be|tg|sd|gu|am|yi|lo|uz|fo|ht|ps|tk|nn|mt|sa|lb|my|bo|tl|mg|as|tt|haw|ln|ha|ba|jw|su|yue)$"
        )
    )]
    pub language: Option<String>,
}

impl Example for CreateProject {
    fn example() -> Self {
        CreateProject {
            source_url: None,
            file_key: Some("uploads/3f2c9a1e-7b4d-4c8e-9f1a-2b3c4d5e6f70/talk.mp4".into()),
            title: Some("Launch talk".into()),
            thumbnail: None,
            duration_sec: Some(600.0),
            clip_duration_preset: Some("30-60".into()),
            caption_template: Some("karaoke".into()),
            skip_cuts: Some(false),
            layout: Some("auto".into()),
            aspect_ratio: Some("9:16".into()),
            prompt: Some("the part about pricing mistakes".into()),
            remove_fillers: Some(false),
            language: None,
        }
    }
}

/// Percent done of each stage.
#[derive(Object)]
pub struct StepProgress {
    #[oai(validator(maximum(value = "100")))]
    pub download: u8,
    #[oai(validator(maximum(value = "100")))]
    pub transcribe: u8,
    #[oai(validator(maximum(value = "100")))]
    pub cut: u8,
    #[oai(validator(maximum(value = "100")))]
    pub caption: u8,
}

/// A project (contract 2.1).
#[derive(Object)]
#[oai(rename_all = "camelCase", example)]
pub struct Project {
    pub id: Uuid,
    pub title: Text,
    /// The video's URL; for an upload, a stable link to the uploaded file
    /// (`/media/<fileKey>?sig=…`, answered with a 307 to a fresh signed URL,
    /// 404 once the upload is deleted with its last project).
    pub source_url: Uri,
    /// Seconds processed.
    pub duration_sec: f64,
    /// `M:SS`.
    pub duration: Text,
    /// Creation day, YYYY-MM-DD.
    pub date: Date,
    /// Number of clips made so far.
    pub clips: u32,
    pub status: ProjectStatusText,
    pub state: ProjectState,
    /// Thumbnail URL: the one given at creation, else the video's; for an
    /// upload, a stable link to a frame of it. Empty when there is none.
    pub thumbnail: Text,
    pub step_progress: StepProgress,
    /// As given at creation: a template id or name, a preset or a JSON template.
    pub caption_template: Text,
    pub skip_cuts: bool,
    pub clip_duration_preset: ClipDurationPreset,
    /// The clips' layout as requested (`auto`: chosen per clip; each
    /// clip's `layout` says which).
    pub layout: ClipLayout,
    pub aspect_ratio: AspectRatio,
    /// Why processing failed; `null` otherwise.
    #[oai(nullable)]
    pub error: Option<Text>,
    /// Spoken language (code such as `en`): the one chosen at creation;
    /// otherwise the source's declared one (from its metadata, as
    /// `POST /meta` shows it) until transcription ran, then the one
    /// detected from the speech. `null` while unknown.
    #[oai(nullable)]
    pub language: Option<Text>,
    /// How sure transcription was of `language`: the model's probability
    /// averaged over the first speech windows, 1 when the user chose the
    /// language. `null` until transcription ran.
    #[oai(nullable)]
    pub language_probability: Option<f64>,
    /// What the clips should be about, as given at creation; `null` when none.
    #[oai(nullable)]
    pub prompt: Option<Text>,
    /// Whether filler words are cut out of the clips.
    pub remove_fillers: bool,
    pub created_at: DateTime,
    pub updated_at: DateTime,
}

impl Example for Project {
    fn example() -> Self {
        Project {
            id: "0b6f5a7e-8c1d-4f3e-9a2b-5c4d3e2f1a0b".into(),
            title: "How to open a talk".into(),
            source_url: "https://www.youtube.com/watch?v=dQw4w9WgXcQ".into(),
            duration_sec: 612.0,
            duration: "10:12".into(),
            date: "2026-05-01".into(),
            clips: 0,
            status: "Na fila".into(),
            state: "queued".into(),
            thumbnail: "https://i.ytimg.com/vi/dQw4w9WgXcQ/hqdefault.jpg".into(),
            step_progress: StepProgress {
                download: 0,
                transcribe: 0,
                cut: 0,
                caption: 0,
            },
            caption_template: "default".into(),
            skip_cuts: false,
            clip_duration_preset: "auto".into(),
            layout: "auto".into(),
            aspect_ratio: "9:16".into(),
            error: None,
            language: Some("en".into()),
            language_probability: Some(0.98),
            prompt: None,
            remove_fillers: false,
            created_at: "2026-05-01T18:00:00.000Z".into(),
            updated_at: "2026-05-01T18:00:00.000Z".into(),
        }
    }
}

/// One caption segment of a clip (contract 2.3).
#[derive(Object)]
pub struct Transcript {
    pub id: Uuid,
    /// `M:SS` in the source video.
    pub start: Text,
    /// `M:SS` in the source video.
    pub end: Text,
    pub text: Text,
}

/// Why a clip scored as it did: sub-scores from 0 to 100.
#[derive(Object)]
#[oai(rename_all = "camelCase")]
pub struct ClipScores {
    /// How strongly the first sentence grabs attention (a question, a
    /// "here's why…" opener, addressing the viewer, numbers, brevity).
    #[oai(validator(maximum(value = "100")))]
    pub hook: u8,
    /// Ends on a full sentence and does not start mid-thought ("and…", "because…").
    #[oai(validator(maximum(value = "100")))]
    pub completeness: u8,
    /// Emphasis words, questions and exclamations, loudness variation.
    #[oai(validator(maximum(value = "100")))]
    pub emotion: u8,
    /// Speech rate (2.3–3.5 words per second is best) and scene changes.
    #[oai(validator(maximum(value = "100")))]
    pub pace: u8,
    /// How well the clip matches the project's prompt; `null` without a prompt.
    #[oai(nullable, validator(maximum(value = "100")))]
    pub prompt_match: Option<u8>,
}

/// A clip (contract 2.2). Its URLs are stable links
/// (`/media/<key>?sig=…`) that never expire: each answers a 307 to a fresh
/// signed URL of the file (local or S3), so a client may keep them.
#[derive(Object)]
#[oai(rename_all = "camelCase")]
pub struct Clip {
    pub id: Uuid,
    pub project_id: Uuid,
    pub title: Text,
    /// 0 to 100: how likely the clip is to hold attention.
    #[oai(validator(maximum(value = "100")))]
    pub score: u8,
    /// One sentence saying why the clip was picked, from its sub-scores and
    /// the prompt words it says (empty for clips made before reasons existed).
    pub reason: Text,
    pub scores: ClipScores,
    /// `M:SS`: the rendered clip's length (the source range less `cuts`).
    pub duration: Text,
    /// Resolution label such as 1080p (the short side).
    pub quality: Text,
    /// The layout the clip was rendered with (never `auto`).
    pub layout: ClipLayout,
    pub thumbnail: Uri,
    /// The MP4.
    pub url: Uri,
    /// SRT subtitles.
    pub subtitle_url: Uri,
    /// WebVTT subtitles.
    pub vtt_url: Uri,
    /// The clip's range in the source, seconds.
    pub start_sec: f64,
    pub end_sec: f64,
    /// Spans of that range cut out of the clip (its filler words, with
    /// `removeFillers`), in source seconds; empty otherwise. The clip's
    /// `transcripts`, captions and subtitles are on the cut clip's timeline.
    pub cuts: Vec<ClipCut>,
    pub transcripts: Vec<Transcript>,
    pub created_at: DateTime,
    /// The clip's newest version: 1 as processing made it, one more per
    /// edit that renders and per restore. While `status` is `rendering`
    /// this is the version being made, and the files are still the
    /// previous version's.
    pub version: u32,
    /// `ready`, `rendering` (an edit's new version is being made) or
    /// `failed` (the last edit's render failed: `renderError` says why; the
    /// files are the previous version's).
    pub status: ClipStatus,
    #[oai(nullable)]
    pub render_error: Option<Text>,
}

/// A span of the source cut out of a clip.
#[derive(Object)]
#[oai(rename_all = "camelCase")]
pub struct ClipCut {
    pub start_sec: f64,
    pub end_sec: f64,
}

/// A page of projects, newest first.
#[derive(Object)]
pub struct ProjectPage {
    pub projects: Vec<Project>,
    pub total: u64,
    pub page: u64,
    pub limit: u64,
}

#[derive(Object)]
#[oai(rename_all = "camelCase")]
pub struct NewProject {
    pub project_id: Uuid,
    pub project: Project,
}

#[derive(Object)]
#[oai(rename_all = "camelCase")]
pub struct ProjectWithClips {
    pub project: Project,
    pub clips: Vec<Clip>,
    /// The style the clips are rendered in: `captionTemplate` resolved and
    /// clamped, with the plan's watermark rule applied (on the free plan
    /// the watermark is on, at least 50% opaque and 12% of the width).
    pub caption_style: TemplateStyle,
}

#[derive(Object)]
#[oai(rename_all = "camelCase")]
pub struct CancelledProject {
    pub project_id: Uuid,
    /// Always `Cancelado`.
    pub status: ProjectStatusText,
}

#[derive(Object)]
#[oai(rename_all = "camelCase")]
pub struct DeletedProject {
    pub project_id: Uuid,
    /// Always true.
    pub deleted: bool,
}

/// One Server-Sent Event of `GET /projects/{id}/status`; after `completed`,
/// `failed` or `cancelled` the stream ends.
#[derive(Object, Clone)]
pub struct SseEvent {
    /// Increasing per project: send it back as `Last-Event-ID` to resume.
    #[oai(validator(pattern = "^[0-9]+$"))]
    pub id: Text,
    pub event: ProjectEventType,
    /// A JSON object, by `event`:
    /// `progress` {projectId, state, status, stage, stepProgress, percent}
    /// (`stage` the one running or just finished, null while queued;
    /// `stepProgress` {download, transcribe, cut, caption} and `percent`
    /// 0–100);
    /// `clip` {projectId, clipId, index, title, score, reason, scores}, a
    /// summary of a stored clip (the whole Clip is in
    /// `GET /projects/{id}`);
    /// `render` {projectId, clipId, version, state, percent, message}, an
    /// edited clip's version (`state` rendering, rendered or failed;
    /// `message` null but on failure);
    /// `completed` {projectId, state, status, clips} (`clips` their count);
    /// `failed` {projectId, state, status, message};
    /// `cancelled` {projectId, state, status}.
    pub data: Text,
}

#[derive(ApiResponse)]
pub enum CreatedProject {
    /// Created; processing is queued.
    #[oai(status = 201)]
    Created(poem_openapi::payload::Json<NewProject>),
}

pub fn project_view(p: &ProjectRecord, links: &StableLinks) -> Project {
    let [download, transcribe, cut, caption] = p.step_progress;
    let (source_url, thumbnail) = match &p.source {
        Source::Url(url) => (url.clone(), p.thumbnail.clone()),
        Source::Upload(key) if p.thumbnail.is_empty() => {
            (links.link(key), links.link(&frame_key(key)))
        }
        Source::Upload(key) => (links.link(key), p.thumbnail.clone()),
    };
    Project {
        id: p.id.clone().into(),
        title: p.title.clone().into(),
        source_url: source_url.into(),
        duration_sec: p.duration_sec,
        duration: records::duration_display(p.duration_sec).into(),
        date: date_of(p.created_at).into(),
        clips: p.clip_count,
        status: status_text(p.state).into(),
        state: p.state.as_str().into(),
        thumbnail: thumbnail.into(),
        step_progress: StepProgress {
            download,
            transcribe,
            cut,
            caption,
        },
        caption_template: p.caption_template.clone().into(),
        skip_cuts: p.skip_cuts,
        clip_duration_preset: p.preset.clone().into(),
        layout: p.layout.as_str().into(),
        aspect_ratio: p.aspect_ratio.as_str().into(),
        error: p.error.clone().map(Text),
        language: p.language.clone().map(Text),
        language_probability: p.language_probability,
        prompt: p.prompt.clone().map(Text),
        remove_fillers: p.remove_fillers,
        created_at: iso8601(p.created_at).into(),
        updated_at: iso8601(p.updated_at).into(),
    }
}

/// `ready`, `rendering` or `failed` (see [`Clip::status`]).
pub fn clip_status(c: &ClipRecord) -> &'static str {
    match &c.render {
        Some(r) if r.state == RenderState::Failed => "failed",
        Some(_) => "rendering",
        None => "ready",
    }
}

/// A clip with the stable links of its files.
pub fn clip_view(c: &ClipRecord, links: &StableLinks) -> Clip {
    let [thumbnail, url, subtitle_url, vtt_url] =
        [&c.thumbnail_key, &c.video_key, &c.subtitle_key, &c.vtt_key].map(|k| links.link(k));
    Clip {
        id: c.id.clone().into(),
        project_id: c.project_id.clone().into(),
        title: c.title.clone().into(),
        score: c.score,
        reason: c.reason.clone().into(),
        scores: ClipScores {
            hook: c.scores.hook,
            completeness: c.scores.completeness,
            emotion: c.scores.emotion,
            pace: c.scores.pace,
            prompt_match: c.scores.prompt_match,
        },
        duration: records::duration_display(c.duration()).into(),
        quality: c.quality.clone().into(),
        layout: c.layout.as_str().into(),
        version: c.latest_version(),
        status: clip_status(c).into(),
        render_error: c
            .render
            .as_ref()
            .filter(|r| r.state == RenderState::Failed)
            .and_then(|r| r.error.clone())
            .map(Text),
        thumbnail: thumbnail.into(),
        url: url.into(),
        subtitle_url: subtitle_url.into(),
        vtt_url: vtt_url.into(),
        start_sec: c.start,
        end_sec: c.end,
        cuts: c
            .cuts
            .iter()
            .map(|&(start_sec, end_sec)| ClipCut { start_sec, end_sec })
            .collect(),
        transcripts: c
            .segments
            .iter()
            .map(|s| Transcript {
                id: s.id.clone().into(),
                start: records::duration_display(s.start).into(),
                end: records::duration_display(s.end).into(),
                text: s.text.clone().into(),
            })
            .collect(),
        created_at: iso8601(c.created_at).into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The keys of each event's `data` are the ones `SseEvent` documents.
    #[test]
    fn event_data_is_what_the_document_says() {
        use clipforge_actors::projects::events::{
            CancelledEvent, ClipEvent, CompletedEvent, FailedEvent, ProgressEvent,
            ProjectEventBody as B, RenderEvent,
        };
        let doc = include_str!("projects_types.rs");
        let (p, state) = (String::from("p"), State::Completed);
        let bodies = [
            B::Progress(ProgressEvent {
                project_id: p.clone(),
                state: State::Queued,
                stage: None,
                step_progress: Default::default(),
                percent: 0,
            }),
            B::Clip(ClipEvent {
                project_id: p.clone(),
                clip_id: "c".into(),
                index: 1,
                title: "t".into(),
                score: 70,
                reason: String::new(),
                scores: Default::default(),
            }),
            B::Render(RenderEvent {
                project_id: p.clone(),
                clip_id: "c".into(),
                version: 2,
                state: "rendering".into(),
                percent: 5,
                message: None,
            }),
            B::Completed(CompletedEvent {
                project_id: p.clone(),
                state,
                clips: 3,
            }),
            B::Failed(FailedEvent {
                project_id: p.clone(),
                state: State::Failed,
                message: "no speech".into(),
            }),
            B::Cancelled(CancelledEvent {
                project_id: p,
                state: State::Cancelled,
            }),
        ];
        for body in bodies {
            let data: serde_json::Value = serde_json::from_str(&event_data(&body)).unwrap();
            let mut keys: Vec<&str> = data
                .as_object()
                .unwrap()
                .keys()
                .map(|k| k.as_str())
                .collect();
            let mut documented: Vec<&str> = doc
                .split(&format!("/// `{}` {{", body.name()))
                .nth(1)
                .and_then(|rest| rest.split('}').next())
                .unwrap_or_else(|| panic!("{} is not documented", body.name()))
                .split(", ")
                .collect();
            keys.sort_unstable();
            documented.sort_unstable();
            assert_eq!(keys, documented, "{}", body.name());
        }
    }

    #[test]
    fn statuses_are_localized_at_the_edge() {
        assert_eq!(status_text(State::Queued), "Na fila");
        assert_eq!(status_text(State::Cutting), "Processando");
        assert_eq!(status_text(State::Completed), "Concluído");
        let failed = r#"{"projectId":"p","state":"failed","message":"x"}"#;
        let failed = ProjectEventBody::from_json("failed", failed).unwrap();
        let v: serde_json::Value = serde_json::from_str(&event_data(&failed)).unwrap();
        assert_eq!(
            (&v["status"], &v["state"]),
            (&"Falhou".into(), &"failed".into())
        );
        assert_eq!(v["message"], "x");
        let clip = r#"{"projectId":"p","clipId":"c","index":0,"title":"T","score":9}"#;
        let clip = ProjectEventBody::from_json("clip", clip).unwrap();
        let v: serde_json::Value = serde_json::from_str(&event_data(&clip)).unwrap();
        assert_eq!(v["clipId"], "c");
        assert!(v.get("status").is_none(), "a clip event has no state");
    }
}
