//! Caption styling and rendering: templates, ASS documents for libass, SRT/VTT.

pub mod ass;
pub mod subtitles;
pub mod template;
