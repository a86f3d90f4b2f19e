//! Fault injection for tests and operators: `CLIPFORGE_FAULTS` names actors
//! that panic on purpose at a named point, so supervision can be seen at
//! work. Off unless set.
//!
//! The value is a comma list of `kind[:target]:mode` with mode `once` (the
//! first time the point is reached) or `always`:
//!
//! - `stage-panic:<stage>:once|always` — the stage actor of `<stage>`
//!   (`download`, `transcribe`, `cut`, `caption`, or `*`) panics before the
//!   stage runs;
//! - `account-panic:once|always` — an account actor panics on a command;
//! - `schedule-panic:once|always` — a schedule actor panics before a
//!   publication step;
//! - `project-panic:once|always` — a project actor panics when it starts a
//!   stage;
//! - `relay-panic:once|always` — a clustered node's HTTP relay panics when a
//!   request forwarded by another node reaches it;
//! - `forwarded-panic:once|always` — the task running a request forwarded
//!   by another node panics before the request runs (answered 500);
//! - `render-panic:once|always` — a clip editor's render panics before it
//!   encodes;
//! - `render-batch-panic:once|always` — a clip render batch's actor panics
//!   between renders (outside the render, which catches its own panics);
//! - `render-stall:once|always` — a clip editor's render waits forever
//!   before it encodes (to stop a server in the middle of one);
//! - `dial-panic:once|always` — a clustered node's seed dialer panics
//!   when it is asked to dial;
//! - `node-server-panic:once|always` — ractor_cluster's node server panics
//!   when a peer's session authenticates (its sessions go with it);
//! - `housekeeping-panic:<job>:once|always` — the housekeeping actor of
//!   `<job>` (`passivation`, `rate-prune`, `token-refresh`, `hand-off` on a
//!   cluster, or `*`) panics at its next run.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// Where an actor can be made to fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Point<'a> {
    Stage(&'a str),
    Account,
    Schedule,
    Project,
    Relay,
    Forwarded,
    Render,
    /// A render batch's actor, outside any one render.
    RenderBatch,
    RenderStall,
    /// A clustered node's seed dialer.
    Dial,
    /// ractor_cluster's node server, as a peer's session authenticates.
    NodeServer,
    Housekeeping(&'a str),
}

#[derive(Debug)]
struct Rule {
    kind: String,
    target: Option<String>,
    always: bool,
    fired: AtomicBool,
}

/// Why a `CLIPFORGE_FAULTS` value was refused; each names the faulty item.
#[derive(Debug, thiserror::Error)]
pub enum FaultSpecError {
    /// Not `kind[:target]:mode`.
    #[error("fault `{item}`: expected kind[:target]:once|always")]
    Shape { item: String },
    /// A kind that is not one of the points above.
    #[error("fault `{item}`: unknown kind `{kind}`")]
    UnknownKind { item: String, kind: String },
    /// A kind that needs a target (`stage-panic`, `housekeeping-panic`)
    /// without one, or another kind with one.
    #[error("fault `{item}`: {kind} needs a target")]
    NeedsTarget { item: String, kind: String },
    #[error("fault `{item}`: {kind} takes no target")]
    TakesNoTarget { item: String, kind: String },
    /// A mode other than `once` or `always`.
    #[error("fault `{item}`: mode must be once or always")]
    Mode { item: String },
}

/// A parsed `CLIPFORGE_FAULTS` value.
#[derive(Debug, Default)]
pub struct Faults {
    rules: Vec<Rule>,
}

impl Faults {
    /// Parses a comma list; an unknown kind or mode is an error (a typo must
    /// not silently disable a test's fault).
    pub fn parse(spec: &str) -> Result<Self, FaultSpecError> {
        let mut rules = Vec::new();
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let parts: Vec<&str> = item.split(':').collect();
            let (kind, target, mode) = match parts.as_slice() {
                [kind, mode] => (*kind, None, *mode),
                [kind, target, mode] => (*kind, Some(target.to_string()), *mode),
                _ => return Err(FaultSpecError::Shape { item: item.into() }),
            };
            let needs_target = kind == "stage-panic" || kind == "housekeeping-panic";
            match kind {
                "stage-panic" | "account-panic" | "schedule-panic" | "project-panic"
                | "relay-panic" | "forwarded-panic" | "render-panic" | "render-stall"
                | "render-batch-panic" | "dial-panic" | "node-server-panic"
                | "housekeeping-panic" => {}
                _ => {
                    return Err(FaultSpecError::UnknownKind {
                        item: item.into(),
                        kind: kind.into(),
                    })
                }
            }
            if needs_target != target.is_some() {
                let (item, kind) = (item.into(), kind.into());
                return Err(if needs_target {
                    FaultSpecError::NeedsTarget { item, kind }
                } else {
                    FaultSpecError::TakesNoTarget { item, kind }
                });
            }
            let always = match mode {
                "always" => true,
                "once" => false,
                _ => return Err(FaultSpecError::Mode { item: item.into() }),
            };
            rules.push(Rule {
                kind: kind.to_string(),
                target,
                always,
                fired: AtomicBool::new(false),
            });
        }
        Ok(Self { rules })
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// True when the actor at `point` must fail now (a `once` rule fires a
    /// single time).
    pub fn hit(&self, point: Point<'_>) -> bool {
        let (kind, target) = match point {
            Point::Stage(s) => ("stage-panic", Some(s)),
            Point::Account => ("account-panic", None),
            Point::Schedule => ("schedule-panic", None),
            Point::Project => ("project-panic", None),
            Point::Relay => ("relay-panic", None),
            Point::Forwarded => ("forwarded-panic", None),
            Point::Render => ("render-panic", None),
            Point::RenderBatch => ("render-batch-panic", None),
            Point::RenderStall => ("render-stall", None),
            Point::Dial => ("dial-panic", None),
            Point::NodeServer => ("node-server-panic", None),
            Point::Housekeeping(job) => ("housekeeping-panic", Some(job)),
        };
        self.rules.iter().any(|r| {
            r.kind == kind
                && match (&r.target, target) {
                    (Some(t), Some(p)) => t == "*" || t == p,
                    (None, None) => true,
                    _ => false,
                }
                && (r.always || !r.fired.swap(true, Ordering::AcqRel))
        })
    }
}

static FAULTS: OnceLock<Faults> = OnceLock::new();

/// Installs the process's faults (once; later calls are ignored).
pub fn install(faults: Faults) {
    if !faults.is_empty() {
        tracing::warn!(faults = ?faults.rules.iter().map(|r| &r.kind).collect::<Vec<_>>(), "fault injection is on");
    }
    let _ = FAULTS.set(faults);
}

/// Reads `CLIPFORGE_FAULTS` (empty or unset: no faults).
pub fn install_from_env() -> Result<(), FaultSpecError> {
    let spec = std::env::var("CLIPFORGE_FAULTS").unwrap_or_default();
    install(Faults::parse(&spec)?);
    Ok(())
}

/// True when a fault is set for `point` now (for faults that are not a
/// panic, such as `render-stall`).
pub fn hit(point: Point<'_>) -> bool {
    FAULTS.get().is_some_and(|f| f.hit(point))
}

/// Panics when a fault is set for `point`: call it where the named actor
/// should fail.
pub fn check(point: Point<'_>) {
    if FAULTS.get().is_some_and(|f| f.hit(point)) {
        panic!("injected fault at {point:?} (CLIPFORGE_FAULTS)");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn once_fires_a_single_time_and_always_every_time() {
        let f = Faults::parse("stage-panic:transcribe:once, account-panic:always").unwrap();
        assert!(!f.hit(Point::Stage("cut")));
        assert!(f.hit(Point::Stage("transcribe")));
        assert!(!f.hit(Point::Stage("transcribe")));
        assert!(f.hit(Point::Account));
        assert!(f.hit(Point::Account));
        assert!(!f.hit(Point::Schedule));
        assert!(!f.hit(Point::Relay));
        let r = Faults::parse("relay-panic:once").unwrap();
        assert!(r.hit(Point::Relay));
        assert!(!r.hit(Point::Relay));
        let h = Faults::parse("housekeeping-panic:rate-prune:once").unwrap();
        assert!(!h.hit(Point::Housekeeping("passivation")));
        assert!(h.hit(Point::Housekeeping("rate-prune")));
        assert!(!h.hit(Point::Housekeeping("rate-prune")));
        assert!(Faults::parse("housekeeping-panic:once").is_err());
        let d = Faults::parse("dial-panic:once").unwrap();
        assert!(d.hit(Point::Dial));
        assert!(!d.hit(Point::Dial));
        let n = Faults::parse("node-server-panic:always").unwrap();
        assert!(!n.hit(Point::Dial));
        assert!(n.hit(Point::NodeServer) && n.hit(Point::NodeServer));
    }

    #[test]
    fn wildcard_stage() {
        let f = Faults::parse("stage-panic:*:always").unwrap();
        assert!(f.hit(Point::Stage("caption")));
        assert!(f.hit(Point::Stage("download")));
    }

    #[test]
    fn typos_are_errors() {
        assert!(Faults::parse("stage-panik:cut:once").is_err());
        assert!(Faults::parse("stage-panic:once").is_err());
        assert!(Faults::parse("account-panic:x:once").is_err());
        assert!(Faults::parse("schedule-panic:sometimes").is_err());
        assert!(Faults::parse("").unwrap().is_empty());
    }
}
