//! Clipforge engine: the media pipeline (probe, transcribe, cut, caption),
//! the caption renderer, the domains with their actors (accounts,
//! projects, posts, billing, webhooks, cluster) and [`engine`], which
//! wires them together on a node.

pub mod accounts;
pub mod billing;
pub mod captions;
pub mod cluster;
pub mod engine;
pub mod faults;
pub mod housekeeping;
pub mod mailbox;
pub mod media;
pub mod metrics;
pub mod posts;
pub mod projects;
pub mod script;
pub mod stage;
pub mod storage;
pub mod supervisor;
pub mod tasks;
pub mod transcript;
pub mod webhooks;
