//! Caption styling and rendering: templates, ASS documents for libass, SRT/VTT.

pub mod ass;
mod ass_format;
mod ass_lines;
pub mod subtitles;
pub mod template;
