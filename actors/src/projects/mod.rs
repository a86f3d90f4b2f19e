//! The project domain: its records (and their older versions), its events,
//! the stages it runs in order, layouts and editor exports, and the actors
//! that run projects over these ([`domain::Projects`], `actor.rs`).

pub mod accounting;
pub mod actor;
pub mod api;
mod clip_add;
pub mod clip_edit;
pub mod clip_history;
pub mod clip_reframe;
mod clip_render;
mod clip_settle;
mod clip_versions;
pub mod clustered;
pub mod domain;
pub mod edit;
pub mod edit_kit;
pub mod error;
pub mod events;
pub mod export;
mod handoff;
mod listings;
pub mod messages;
pub mod more_clips;
pub mod pipeline;
pub mod records;
pub mod reframe;
mod removal;
mod renders;
pub mod stages;
pub mod supervision;
pub mod uploads;
pub mod versions;
pub mod work;
