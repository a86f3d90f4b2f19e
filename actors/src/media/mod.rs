//! Media building blocks: child processes (ffmpeg, ffprobe), audio streaming,
//! speech windows, Whisper, scene detection and face tracking.

pub mod audio;
pub mod avatar;
pub mod ct2_backend;
pub mod download;
pub mod face;
mod face_detect;
pub mod ffprobe;
pub mod fonts;
pub mod frame;
pub mod heap;
pub mod loudness;
mod mouth;
pub mod process;
mod profile;
pub mod scenes;
pub mod spare_cpu;
pub mod vad;
pub mod voicing;
pub mod whisper;
pub mod whisper_guards;
mod whisper_words;
