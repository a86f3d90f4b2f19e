//! The stored layouts of clip records older than this build's and how
//! each is read ([`Record::upgrade`]), as `versions.rs` does for projects:
//! an old value is decoded as the tuple of its fields in order and given
//! the defaults of later fields.

use super::clip_history::ClipEdits;
use super::records::{ClipRecord, SegmentRecord};
use crate::projects::reframe::Layout;
use crate::projects::stages::reasons::ClipScores;
use crate::storage::kv::Result;
use crate::storage::record::{decode_payload, Record};

/// A clip as stored by version 1 (before `layout`), its fields in order.
type ClipRecordV1 = (
    String,
    String,
    u32,
    String,
    u8,
    f64,
    f64,
    String,
    String,
    String,
    String,
    String,
    Vec<SegmentRecord>,
    i64,
);

/// A clip as stored by version 2: version 1's fields, then `layout`,
/// `reason` and `scores`.
type ClipRecordV2 = (ClipRecordV1, String, String, ClipScores);

/// A clip as stored by version 3: version 2's fields, then `cuts`.
type ClipRecordV3 = (ClipRecordV2, Vec<(f64, f64)>);

/// Version 4 added the editor's fields: `version` (1), no edits, no
/// history, no render, no counted bytes, `version_at` = `created_at`.
/// Version 3 added `cuts` (none: older clips were never cut inside);
/// version 2 added `layout`, `reason` and `scores`; version 1 clips were all
/// rendered by the single-face reframe and are read as `single`, with no
/// reason and zero sub-scores (what they did not record).
impl Record for ClipRecord {
    const KIND: &'static str = "clip";
    const VERSION: u16 = 4;

    fn upgrade(version: u16, payload: &[u8]) -> Result<Self> {
        match version {
            1 => Ok(clip_from_v1(decode_payload(payload)?)),
            2 => Ok(clip_from_v2(decode_payload(payload)?)),
            3 => {
                let (v2, cuts): ClipRecordV3 = decode_payload(payload)?;
                Ok(ClipRecord {
                    cuts,
                    ..clip_from_v2(v2)
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

/// A version-2 clip with the defaults of every later field.
fn clip_from_v2((v1, layout, reason, scores): ClipRecordV2) -> ClipRecord {
    ClipRecord {
        layout,
        reason,
        scores,
        ..clip_from_v1(v1)
    }
}

/// A version-1 clip with the defaults of every later field.
fn clip_from_v1(v1: ClipRecordV1) -> ClipRecord {
    {
        let (
            id,
            project_id,
            index,
            title,
            score,
            start,
            end,
            quality,
            video_key,
            subtitle_key,
            vtt_key,
            thumbnail_key,
            segments,
            created_at,
        ) = v1;
        ClipRecord {
            id,
            project_id,
            index,
            title,
            score,
            start,
            end,
            quality,
            video_key,
            subtitle_key,
            vtt_key,
            thumbnail_key,
            segments,
            created_at,
            layout: Layout::Single.as_str().into(),
            reason: String::new(),
            scores: ClipScores::default(),
            cuts: Vec::new(),
            version: 1,
            edits: ClipEdits::default(),
            history: Vec::new(),
            render: None,
            current_bytes: 0,
            version_at: created_at,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::kv;

    #[test]
    fn first_version_clips_are_read_as_single() {
        let seg = SegmentRecord {
            id: "s".into(),
            start: 0.0,
            end: 1.0,
            text: "hi".into(),
        };
        let v1: ClipRecordV1 = (
            "c1".into(),
            "p1".into(),
            1,
            "Title".into(),
            80,
            1.0,
            9.0,
            "1080p".into(),
            "v".into(),
            "s".into(),
            "t".into(),
            "j".into(),
            vec![seg],
            5,
        );
        let mut bytes = crate::storage::record::header(1);
        bincode::serde::encode_into_std_write(&v1, &mut bytes, bincode::config::standard())
            .unwrap();
        let c: ClipRecord = kv::decode(&bytes).expect("upgraded");
        assert_eq!((c.id.as_str(), c.index, c.created_at), ("c1", 1, 5));
        assert_eq!(c.layout, "single");
        assert_eq!((c.reason.as_str(), &c.scores), ("", &ClipScores::default()));
        let mut now = c.clone();
        now.layout = "split".into();
        now.reason = "Opens with a strong hook (hook 80).".into();
        now.scores.prompt_match = Some(40);
        now.cuts = vec![(2.0, 2.4)];
        assert_eq!(
            kv::decode::<ClipRecord>(&kv::encode(&now).unwrap()).unwrap(),
            now
        );
    }

    #[test]
    fn third_version_clips_keep_their_cuts() {
        let v1: ClipRecordV1 = (
            "c1".into(),
            "p1".into(),
            2,
            "T".into(),
            70,
            1.0,
            9.0,
            "1080p".into(),
            "v".into(),
            "s".into(),
            "t".into(),
            "j".into(),
            Vec::new(),
            7,
        );
        let v3: ClipRecordV3 = (
            (v1, "split".into(), "r".into(), ClipScores::default()),
            vec![(2.0, 2.5)],
        );
        let mut bytes = crate::storage::record::header(3);
        bincode::serde::encode_into_std_write(&v3, &mut bytes, bincode::config::standard())
            .unwrap();
        let c: ClipRecord = kv::decode(&bytes).expect("upgraded");
        assert_eq!(
            (c.layout.as_str(), c.cuts.clone()),
            ("split", vec![(2.0, 2.5)])
        );
        assert_eq!((c.version, c.version_at, c.history.len()), (1, 7, 0));
        assert!(c.render.is_none() && c.edits == ClipEdits::default());
    }
}
