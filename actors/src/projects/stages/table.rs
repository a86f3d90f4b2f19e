//! The stage table: the one description of every stage — its name, the
//! work-folder files it reads and writes, its share of the progress bar,
//! whether a cluster worker may run it, and its fault-injection point. The
//! node (`projects/work.rs`), a remote worker (`cluster/worker.rs`: what
//! it fetches from and stores to object storage) and `clipforge clip`
//! (`projects/pipeline.rs`) all read it; `run.rs` refuses to read or write a
//! work file the table does not list for the stage.

use std::path::{Path, PathBuf};

use super::Stage;

/// A file a stage leaves in a project's work folder for the later ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkFile {
    /// The downloaded video, `source.<ext>` (its extension is the video's).
    Source,
    /// What the probe found (`MediaInfo`).
    Media,
    /// Words and sentences (`Transcript`).
    Transcript,
    /// Loudness per 100 ms of the processed range.
    Loudness,
    /// The chosen clips (`Vec<ClipPlan>`).
    Plans,
    /// Scene changes found during transcription (`Option<ahead::Scenes>`).
    Scenes,
    /// The skip-cuts clip's framing found during transcription
    /// (`Option<ahead::Preframed>`).
    Framing,
}

impl WorkFile {
    /// The file's name; `source` has the video's extension after it.
    pub fn name(self) -> &'static str {
        match self {
            WorkFile::Source => "source",
            WorkFile::Media => "media.json",
            WorkFile::Transcript => "transcript.json",
            WorkFile::Loudness => "loudness.json",
            WorkFile::Plans => "plans.json",
            WorkFile::Scenes => "scenes.json",
            WorkFile::Framing => "framing.json",
        }
    }

    /// True when `file` (a name in the work folder) is this file.
    pub fn matches(self, file: &str) -> bool {
        match self {
            WorkFile::Source => file
                .strip_prefix("source.")
                .is_some_and(|ext| !ext.is_empty() && !ext.contains('.') && ext != "part"),
            other => file == other.name(),
        }
    }

    /// The file in `dir`, when it is there (`source.<ext>` is looked up).
    pub fn locate(self, dir: &Path) -> Option<PathBuf> {
        if self != WorkFile::Source {
            let p = dir.join(self.name());
            return p.is_file().then_some(p);
        }
        std::fs::read_dir(dir)
            .ok()?
            .flatten()
            .find(|e| self.matches(&e.file_name().to_string_lossy()))
            .map(|e| e.path())
    }

    /// Where a JSON work file is written in `dir` (not for `Source`, whose
    /// name the download chooses).
    pub fn path(self, dir: &Path) -> PathBuf {
        dir.join(self.name())
    }
}

/// One row of the table.
#[derive(Debug)]
pub struct StageSpec {
    pub stage: Stage,
    pub name: &'static str,
    /// Work files the stage needs (produced by earlier stages).
    pub reads: &'static [WorkFile],
    /// Of `reads`, those the stage can do without (a work folder left by
    /// a version that did not write them).
    pub optional: &'static [WorkFile],
    /// Work files the stage leaves for the later ones.
    pub writes: &'static [WorkFile],
    /// Share of the project's overall progress, in percent (they add to 100).
    pub weight: u8,
    /// A cluster's project may send it to a worker node (its inputs and
    /// outputs then travel through object storage).
    pub remote: bool,
    /// The target of `CLIPFORGE_FAULTS=stage-panic:<fault>:…`.
    pub fault: &'static str,
}

use WorkFile::*;

/// Every stage, in the order a project runs them.
pub const TABLE: [StageSpec; 4] = [
    StageSpec {
        stage: Stage::Download,
        name: "download",
        reads: &[],
        optional: &[],
        writes: &[Source, Media],
        weight: 10,
        remote: true,
        fault: "download",
    },
    StageSpec {
        stage: Stage::Transcribe,
        name: "transcribe",
        reads: &[Source, Media],
        optional: &[],
        writes: &[Transcript, Loudness, Scenes, Framing],
        weight: 40,
        remote: true,
        fault: "transcribe",
    },
    StageSpec {
        stage: Stage::Cut,
        name: "cut",
        reads: &[Source, Media, Transcript, Loudness, Scenes],
        optional: &[Scenes],
        writes: &[Plans],
        weight: 5,
        remote: true,
        fault: "cut",
    },
    StageSpec {
        stage: Stage::Caption,
        name: "caption",
        reads: &[Source, Media, Transcript, Plans, Framing],
        optional: &[Framing],
        writes: &[],
        weight: 45,
        remote: true,
        fault: "caption",
    },
];

impl Stage {
    /// The stage's row of [`TABLE`].
    pub fn spec(self) -> &'static StageSpec {
        &TABLE[self as usize]
    }
}

/// The project's overall percent from each stage's own (0–100), weighted
/// by the table.
pub fn overall_percent(step_progress: &[u8; 4]) -> u8 {
    let done: f64 = TABLE
        .iter()
        .map(|s| step_progress[s.stage as usize] as f64 * s.weight as f64)
        .sum();
    (done / 100.0).round().clamp(0.0, 100.0) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_input_is_an_earlier_output() {
        let mut produced: Vec<WorkFile> = Vec::new();
        for spec in &TABLE {
            for f in spec.reads {
                assert!(
                    produced.contains(f),
                    "the {} stage reads {} but no earlier stage writes it",
                    spec.name,
                    f.name()
                );
            }
            produced.extend_from_slice(spec.writes);
            for f in spec.optional {
                assert!(
                    spec.reads.contains(f),
                    "{}: optional {} is not read",
                    spec.name,
                    f.name()
                );
            }
        }
        // Nothing is written that no later stage reads.
        for (i, spec) in TABLE.iter().enumerate() {
            for f in spec.writes {
                assert!(
                    TABLE[i + 1..].iter().any(|s| s.reads.contains(f)),
                    "the {} stage writes {} but no later stage reads it",
                    spec.name,
                    f.name()
                );
            }
        }
    }

    #[test]
    fn the_table_is_in_stage_order_and_weights_add_to_100() {
        let order: Vec<Stage> = TABLE.iter().map(|s| s.stage).collect();
        assert_eq!(order, Stage::ALL);
        for s in Stage::ALL {
            assert_eq!(s.spec().stage, s);
            assert_eq!(s.name(), s.spec().name);
        }
        assert_eq!(TABLE.iter().map(|s| s.weight as u32).sum::<u32>(), 100);
        assert_eq!(overall_percent(&[100, 100, 100, 100]), 100);
        assert_eq!(overall_percent(&[100, 50, 0, 0]), 30);
    }

    #[test]
    fn the_source_is_found_by_its_stem() {
        let dir = tempfile::tempdir().unwrap();
        assert!(Source.locate(dir.path()).is_none());
        std::fs::write(dir.path().join("source.part"), b"x").unwrap();
        assert!(Source.locate(dir.path()).is_none());
        std::fs::write(dir.path().join("source.webm"), b"x").unwrap();
        assert_eq!(
            Source.locate(dir.path()).unwrap(),
            dir.path().join("source.webm")
        );
        assert!(!Source.matches("source.mp4.part") && !Source.matches("source.f137.mp4"));
        assert!(Plans.matches("plans.json") && !Plans.matches("plans.json.part"));
    }
}
