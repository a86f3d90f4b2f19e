//! The clip renders of this node ([`Renders`]): how many each account runs
//! and what each batch actor has left, and what a new version is made of
//! ([`RenderJob`]). `clip_render.rs` runs them.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use crate::projects::clip_history::ClipEdits;
use crate::projects::records::{ClipRecord, ProjectRecord};
use crate::projects::reframe::manual::ManualSpan;

/// What a new version is made of.
#[derive(Clone, Debug)]
pub struct RenderJob {
    pub version: u32,
    pub title: String,
    pub start: f64,
    pub end: f64,
    pub edits: ClipEdits,
    /// Spans framed by hand (source seconds); `None`: the current
    /// version's.
    pub reframe: Option<Vec<ManualSpan>>,
}

/// Renders running or waiting on this node: per account, and the
/// renders each live batch actor has not finished, by actor name.
#[derive(Default)]
pub struct Renders {
    pub(super) counts: Mutex<HashMap<String, usize>>,
    pub(super) batches: Mutex<HashMap<String, Batch>>,
    pub(super) named: AtomicU64,
}

/// A batch's project and the renders it has not finished (the first is
/// the one running).
#[derive(Clone)]
pub(super) struct Batch {
    pub(super) project: ProjectRecord,
    pub(super) pending: Arc<Mutex<VecDeque<(ClipRecord, RenderJob)>>>,
}
