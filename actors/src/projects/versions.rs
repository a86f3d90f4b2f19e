//! The stored layouts of project, clip and project event records older
//! than this build's,
//! and how each is read ([`Record::upgrade`]). Each version adds fields at
//! the end; an old value is decoded as the tuple of its fields in order
//! (serde's tuples stop at 16, so longer ones nest; bincode encodes nested
//! tuples exactly like one sequence) and given the defaults of later fields.

use super::events::{ProjectEvent, ProjectEventBody};
use super::records::{ProjectRecord, ProjectState, Source};
use crate::captions::template::CaptionStyleV1;
use crate::projects::reframe::{AspectRatio, Layout};
use crate::projects::stages::Stage;
use crate::storage::kv::Result;
use crate::storage::record::{decode_payload, Record};

/// A project as stored before `language` existed (read, never written):
/// its fields in order, as two tuples (serde's tuples stop at 16; bincode
/// encodes nested tuples exactly like one sequence).
type ProjectRecordV1 = (
    (
        String,
        String,
        String,
        Source,
        String,
        f64,
        String,
        String,
        CaptionStyleV1,
        bool,
    ),
    (
        ProjectState,
        [u8; 4],
        Option<String>,
        u64,
        u32,
        Vec<Stage>,
        i64,
        i64,
        u64,
    ),
);

/// A project as stored by version 2: version 1's fields, then `language`
/// (bincode encodes the nested tuple like one sequence of fields).
type ProjectRecordV2 = (ProjectRecordV1, Option<String>);

/// Version 3: version 2's fields, then `layout`, `aspect_ratio` and `prompt`.
type ProjectRecordV3 = (ProjectRecordV2, Layout, AspectRatio, Option<String>);

/// Version 5 added `language_given` (false: older projects' language was
/// their source's, or none) and `language_probability` (`None`: not
/// recorded). Version 4 added `remove_fillers` (off in older projects) and the
/// style's `emphasize_keywords` (on: older styles all emphasized; older
/// versions store the style as [`CaptionStyleV1`]); version 3 added
/// `layout` and `aspect_ratio` (read from older versions as
/// `auto` and 9:16, what every older project was rendered with) and
/// `prompt` (`None`: older projects had none); version 2
/// added `language`; version 1 (stored before it, also the unversioned
/// layout) is read as a `language` of `None`.
impl Record for ProjectRecord {
    const KIND: &'static str = "project";
    const VERSION: u16 = 5;

    fn upgrade(version: u16, payload: &[u8]) -> Result<Self> {
        match version {
            1 => Ok(from_v1(decode_payload(payload)?)),
            2 => Ok(from_v2(decode_payload(payload)?)),
            4 => Ok(decode_payload::<ProjectRecordV4>(payload)?.into()),
            3 => {
                let (v2, layout, aspect_ratio, prompt): ProjectRecordV3 = decode_payload(payload)?;
                Ok(ProjectRecord {
                    layout,
                    aspect_ratio,
                    prompt,
                    ..from_v2(v2)
                })
            }
            _ => Err(crate::storage::error::StorageError::Version {
                kind: Self::KIND,
                found: version,
                supported: Self::VERSION,
            }),
        }
    }
}

/// A project as version 4 stored it: every field up to `remove_fillers`.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct ProjectRecordV4 {
    id: String,
    user_id: String,
    title: String,
    source: Source,
    thumbnail: String,
    duration_sec: f64,
    preset: String,
    caption_template: String,
    style: crate::captions::template::CaptionStyle,
    skip_cuts: bool,
    state: ProjectState,
    step_progress: [u8; 4],
    error: Option<String>,
    reserved_credits: u64,
    clip_count: u32,
    finished: Vec<Stage>,
    created_at: i64,
    updated_at: i64,
    last_event: u64,
    language: Option<String>,
    layout: Layout,
    aspect_ratio: AspectRatio,
    prompt: Option<String>,
    remove_fillers: bool,
}

impl From<ProjectRecordV4> for ProjectRecord {
    fn from(v: ProjectRecordV4) -> Self {
        ProjectRecord {
            id: v.id,
            user_id: v.user_id,
            title: v.title,
            source: v.source,
            thumbnail: v.thumbnail,
            duration_sec: v.duration_sec,
            preset: v.preset,
            caption_template: v.caption_template,
            style: v.style,
            skip_cuts: v.skip_cuts,
            state: v.state,
            step_progress: v.step_progress,
            error: v.error,
            reserved_credits: v.reserved_credits,
            clip_count: v.clip_count,
            finished: v.finished,
            created_at: v.created_at,
            updated_at: v.updated_at,
            last_event: v.last_event,
            language: v.language,
            layout: v.layout,
            aspect_ratio: v.aspect_ratio,
            prompt: v.prompt,
            remove_fillers: v.remove_fillers,
            language_given: false,
            language_probability: None,
        }
    }
}

/// A version-2 project with the defaults of every later field.
fn from_v2((v1, language): ProjectRecordV2) -> ProjectRecord {
    ProjectRecord {
        language,
        ..from_v1(v1)
    }
}

/// A version-1 project with the defaults of every later field.
fn from_v1((head, tail): ProjectRecordV1) -> ProjectRecord {
    {
        let (
            id,
            user_id,
            title,
            source,
            thumbnail,
            duration_sec,
            preset,
            caption_template,
            style,
            skip_cuts,
        ) = head;
        let (
            state,
            step_progress,
            error,
            reserved_credits,
            clip_count,
            finished,
            created_at,
            updated_at,
            last_event,
        ) = tail;
        ProjectRecord {
            id,
            user_id,
            title,
            source,
            thumbnail,
            duration_sec,
            preset,
            caption_template,
            style: style.into(),
            skip_cuts,
            state,
            step_progress,
            error,
            reserved_credits,
            clip_count,
            finished,
            created_at,
            updated_at,
            last_event,
            language: None,
            layout: Layout::Auto,
            aspect_ratio: AspectRatio::Vertical,
            prompt: None,
            remove_fillers: false,
            language_given: false,
            language_probability: None,
        }
    }
}

/// A project event as version 1 stored it: id, SSE name, JSON `data` text.
type ProjectEventV1 = (u64, String, String);

/// Version 2 stores the typed body; version 1 (also the unversioned layout)
/// kept the event's name and its JSON `data`, read back into the body here.
impl Record for ProjectEvent {
    const KIND: &'static str = "project event";
    const VERSION: u16 = 2;

    fn upgrade(version: u16, payload: &[u8]) -> Result<Self> {
        match version {
            1 => {
                let (id, name, data): ProjectEventV1 = decode_payload(payload)?;
                let body = ProjectEventBody::from_json(&name, &data).map_err(|e| {
                    crate::storage::error::StorageError::Corrupt(format!(
                        "project event {id} ({name}): {e}"
                    ))
                })?;
                Ok(ProjectEvent { id, body })
            }
            _ => Err(crate::storage::error::StorageError::Version {
                kind: Self::KIND,
                found: version,
                supported: Self::VERSION,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::captions::template::CaptionStyle;
    use crate::projects::records::decode_project;
    use crate::storage::kv;

    #[test]
    fn first_version_records_are_upgraded_on_read() {
        let style = CaptionStyle::default();
        let v1: ProjectRecordV1 = (
            (
                "p1".into(),
                "u1".into(),
                "Talk".into(),
                Source::Upload("uploads/x/talk.mp4".into()),
                String::new(),
                12.5,
                "auto".into(),
                "default".into(),
                (&style).into(),
                false,
            ),
            (
                ProjectState::Completed,
                [100; 4],
                None,
                1,
                2,
                vec![Stage::Download],
                10,
                20,
                7,
            ),
        );
        // A version-1 value: the bincode payload without a header.
        let v1_fields = || v1.clone();
        let v1 = bincode::serde::encode_to_vec(&v1, bincode::config::standard()).unwrap();
        let p = decode_project(&v1).expect("upgraded");
        assert_eq!((p.id.as_str(), p.clip_count, p.last_event), ("p1", 2, 7));
        assert_eq!((&p.style, &p.language), (&style, &None));
        assert_eq!(
            (p.layout, p.aspect_ratio),
            (Layout::Auto, AspectRatio::Vertical)
        );
        // A version-2 value: version 1's fields and the language, behind a header.
        let mut v2 = crate::storage::record::header(2);
        bincode::serde::encode_into_std_write(
            &(v1_fields(), Some("fr".to_string())),
            &mut v2,
            bincode::config::standard(),
        )
        .unwrap();
        let p2 = decode_project(&v2).expect("upgraded from v2");
        assert_eq!((p2.id.as_str(), p2.language.as_deref()), ("p1", Some("fr")));
        assert_eq!((p2.layout, &p2.prompt), (Layout::Auto, &None));
        // A version-3 value: version 2's, then layout, aspect ratio, prompt.
        let mut v3 = crate::storage::record::header(3);
        bincode::serde::encode_into_std_write(
            &(
                (v1_fields(), Some("fr".to_string())),
                Layout::Split,
                AspectRatio::Square,
                Some("pricing".to_string()),
            ),
            &mut v3,
            bincode::config::standard(),
        )
        .unwrap();
        let p3 = decode_project(&v3).expect("upgraded from v3");
        assert_eq!(
            (p3.layout, p3.prompt.as_deref()),
            (Layout::Split, Some("pricing"))
        );
        assert!(!p3.remove_fillers && p3.style.emphasize_keywords);
        // A version-4 value: every field before `language_given`.
        let mut v4 = crate::storage::record::header(4);
        let mut old = ProjectRecordV4 {
            id: p3.id.clone(),
            user_id: p3.user_id.clone(),
            title: p3.title.clone(),
            source: p3.source.clone(),
            thumbnail: p3.thumbnail.clone(),
            duration_sec: p3.duration_sec,
            preset: p3.preset.clone(),
            caption_template: p3.caption_template.clone(),
            style: p3.style.clone(),
            skip_cuts: p3.skip_cuts,
            state: p3.state,
            step_progress: p3.step_progress,
            error: None,
            reserved_credits: 1,
            clip_count: 2,
            finished: p3.finished.clone(),
            created_at: 10,
            updated_at: 20,
            last_event: 7,
            language: Some("en".into()),
            layout: Layout::Speaker,
            aspect_ratio: AspectRatio::Square,
            prompt: None,
            remove_fillers: true,
        };
        old.style.emphasize_keywords = false;
        bincode::serde::encode_into_std_write(&old, &mut v4, bincode::config::standard()).unwrap();
        let p4 = decode_project(&v4).expect("upgraded from v4");
        assert_eq!(
            (p4.language.as_deref(), p4.layout, p4.remove_fillers),
            (Some("en"), Layout::Speaker, true)
        );
        assert!(!p4.style.emphasize_keywords);
        assert_eq!((p4.language_given, p4.language_probability), (false, None));
        let mut current = p.clone();
        current.language = Some("de".into());
        current.layout = Layout::Split;
        current.aspect_ratio = AspectRatio::Square;
        current.prompt = Some("the part about pricing".into());
        current.remove_fillers = true;
        current.style.emphasize_keywords = false;
        current.language_given = true;
        current.language_probability = Some(0.93);
        let again = decode_project(&kv::encode(&current).unwrap()).expect("current");
        assert_eq!(again, current);
        assert!(decode_project(b"garbage").is_err());
    }

    #[test]
    fn first_version_events_are_read_typed() {
        // As version 1 stored them: the name and the JSON the engine built.
        let stored = [
            (
                "progress",
                serde_json::json!({ "projectId": "p1", "state": "transcribing",
                    "stage": "transcribe", "percent": 30,
                    "stepProgress": {"download": 100, "transcribe": 50, "cut": 0, "caption": 0} }),
            ),
            (
                "progress",
                serde_json::json!({ "projectId": "p1", "state": "queued", "stage": null,
                    "percent": 0,
                    "stepProgress": {"download": 0, "transcribe": 0, "cut": 0, "caption": 0} }),
            ),
            (
                "clip",
                serde_json::json!({ "projectId": "p1", "clipId": "c1", "index": 0,
                    "title": "T", "score": 80, "reason": "R",
                    "scores": {"hook": 1, "completeness": 2, "emotion": 3, "pace": 4, "promptMatch": null} }),
            ),
            (
                "completed",
                serde_json::json!({ "projectId": "p1", "state": "completed", "clips": 2 }),
            ),
            (
                "failed",
                serde_json::json!({ "projectId": "p1", "state": "failed", "message": "no speech" }),
            ),
        ];
        for (i, (name, data)) in stored.iter().enumerate() {
            let v1: ProjectEventV1 = (i as u64 + 1, name.to_string(), data.to_string());
            let mut bytes = crate::storage::record::header(1);
            bincode::serde::encode_into_std_write(&v1, &mut bytes, bincode::config::standard())
                .unwrap();
            let e: ProjectEvent = kv::decode(&bytes).expect("upgraded");
            assert_eq!((e.id, e.body.name()), (i as u64 + 1, *name));
            assert_eq!(&e.body.data(), data, "the {name} event keeps its JSON");
            let again: ProjectEvent = kv::decode(&kv::encode(&e).unwrap()).unwrap();
            assert_eq!(again, e);
        }
        let bad: ProjectEventV1 = (1, "progress".into(), "{not json".into());
        let mut bytes = crate::storage::record::header(1);
        bincode::serde::encode_into_std_write(&bad, &mut bytes, bincode::config::standard())
            .unwrap();
        assert!(kv::decode::<ProjectEvent>(&bytes).is_err());
    }
}
