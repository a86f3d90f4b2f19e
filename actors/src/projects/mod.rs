//! The project domain: its records (and their older versions), its events,
//! the stages it runs in order, layouts and editor exports. The engine
//! (`crate::service`) runs projects as actors over these.

pub mod clip_history;
mod clip_versions;
pub mod edit;
pub mod edit_kit;
pub mod events;
pub mod export;
pub mod more_clips;
pub mod pipeline;
pub mod records;
pub mod reframe;
pub mod stages;
pub mod uploads;
pub mod versions;
pub mod work;
