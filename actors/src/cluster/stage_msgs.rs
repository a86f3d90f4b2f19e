//! The messages of stage work across the cluster: a [`StageJob`] sent to
//! a worker ([`WorkerMsg`]) and its [`StageReport`]s back to the project's
//! `RemoteStage` ([`RemoteStageMsg`]), cast to the process group
//! `clipforge.stage.<run>` it joined.

use ractor::ActorRef;
use ractor_cluster::RactorClusterMessage;
use serde::{Deserialize, Serialize};

use super::stage_wire::Carried;
use super::wire::Wire;
use crate::projects::records::ProjectRecord;
use crate::projects::stages::{Stage, StageError};
use crate::projects::work::CaptionResult;

pub fn reply_group(run: &str) -> String {
    format!("clipforge.stage.{run}")
}

/// One stage of one project, sent to a worker.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StageJob {
    /// Unique per dispatch: `<run>#<n>`.
    pub job: String,
    /// The sender's run (reply group key).
    pub run: String,
    pub stage: Stage,
    pub project: ProjectRecord,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum StageReport {
    Accepted {
        job: String,
        node: String,
    },
    Progress {
        job: String,
        pct: u8,
    },
    Done {
        job: String,
        result: Carried<Result<Option<CaptionResult>, StageError>>,
    },
}

impl StageReport {
    pub fn job(&self) -> &str {
        match self {
            Self::Accepted { job, .. } | Self::Progress { job, .. } | Self::Done { job, .. } => job,
        }
    }
}

#[derive(RactorClusterMessage)]
#[expect(
    clippy::large_enum_variant,
    reason = "one message per stage run; boxing would not change the wire format"
)]
pub enum WorkerMsg {
    Run(Wire<Carried<StageJob>>),
    /// Cancel a job by id.
    Cancel(String),
}

#[derive(RactorClusterMessage)]
pub enum RemoteStageMsg {
    Report(Wire<StageReport>),
    /// The local timer: check the worker is alive.
    Tick,
    /// The local timer of a held stage: look for a free slot again.
    Retry,
}

/// Casts `r` to the run's reply group; false when nobody is in it (yet).
pub(super) fn report(run: &str, r: StageReport) -> bool {
    let members = ractor::pg::get_members(&reply_group(run));
    for m in &members {
        let to: ActorRef<RemoteStageMsg> = m.clone().into();
        let _ = to.cast(RemoteStageMsg::Report(Wire(Some(r.clone()))));
    }
    !members.is_empty()
}
