//! 16 kHz mono PCM streamed out of ffmpeg, never loaded whole, plus the
//! loudness series measured on the way (one value per 100 ms window).
//!
//! ffmpeg writes 16-bit samples, read as `s / 32768`, as faster-whisper's
//! `decode_audio` reads them: ffmpeg's downmix of a stereo source to mono
//! keeps the sum of its coefficients at 1 for an integer format but not for
//! `f32le` (there each channel is weighted 0.707, the audio 3 dB louder), and
//! Whisper's features, and in crosstalk its words, follow that level.

use std::io::Read;
use std::path::Path;
use std::process::{Child, ChildStdout, Stdio};

use super::process::{kill_group, std_command};
use super::whisper::SAMPLE_RATE;

/// Loudness windows are this long (seconds).
pub const LOUDNESS_STEP: f64 = 0.1;
const LOUDNESS_WINDOW: usize = SAMPLE_RATE / 10;

/// Why decoding the audio track failed (see [`PcmStream::finish`]).
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// ffmpeg could not be waited for.
    #[error(transparent)]
    Wait(#[from] std::io::Error),
    /// ffmpeg failed: the last line of its error output.
    #[error("{0}")]
    Ffmpeg(String),
}

/// A running `ffmpeg … -f s16le pipe:1`, read in blocks.
pub struct PcmStream {
    child: Child,
    stdout: ChildStdout,
    carry: Vec<u8>,
    /// Loudness (RMS dBFS) of each finished 100 ms window.
    pub loudness_db: Vec<f32>,
    acc: f64,
    acc_n: usize,
    /// Samples delivered so far.
    pub samples_read: u64,
    stderr_path: tempfile::NamedTempFile,
}

impl PcmStream {
    /// Starts decoding `input` from `start` seconds, for `duration` seconds
    /// (or to the end).
    pub fn open(input: &Path, start: f64, duration: Option<f64>) -> std::io::Result<Self> {
        let stderr_path = tempfile::NamedTempFile::new()?;
        let mut cmd = std_command("ffmpeg");
        cmd.args(["-nostdin", "-v", "error"]);
        if start > 0.0 {
            cmd.args(["-ss", &format!("{start:.3}")]);
        }
        cmd.arg("-i").arg(input);
        if let Some(d) = duration {
            cmd.args(["-t", &format!("{d:.3}")]);
        }
        cmd.args([
            "-vn",
            "-sn",
            "-dn",
            "-ac",
            "1",
            "-ar",
            &SAMPLE_RATE.to_string(),
            "-f",
            "s16le",
            "pipe:1",
        ])
        .stdout(Stdio::piped())
        .stderr(stderr_path.reopen()?);
        let mut child = cmd.spawn()?;
        let stdout = child.stdout.take().expect("stdout is piped");
        Ok(Self {
            child,
            stdout,
            carry: Vec::new(),
            loudness_db: Vec::new(),
            acc: 0.0,
            acc_n: 0,
            samples_read: 0,
            stderr_path,
        })
    }

    /// Appends up to `max` samples to `out`; returns how many (0 = end).
    pub fn read_into(&mut self, out: &mut Vec<f32>, max: usize) -> std::io::Result<usize> {
        let mut bytes = vec![0u8; max * 2];
        let n = loop {
            match self.stdout.read(&mut bytes) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                other => break other?,
            }
        };
        if n == 0 {
            return Ok(0);
        }
        self.carry.extend_from_slice(&bytes[..n]);
        let whole = self.carry.len() / 2 * 2;
        let before = out.len();
        let carry = std::mem::take(&mut self.carry);
        for c in carry[..whole].chunks_exact(2) {
            let s = f32::from(i16::from_le_bytes([c[0], c[1]])) / 32768.0;
            out.push(s);
            self.acc += (s as f64) * (s as f64);
            self.acc_n += 1;
            if self.acc_n == LOUDNESS_WINDOW {
                self.push_loudness();
            }
        }
        self.carry = carry;
        self.carry.drain(..whole);
        let got = out.len() - before;
        self.samples_read += got as u64;
        Ok(got)
    }

    fn push_loudness(&mut self) {
        let rms = (self.acc / self.acc_n.max(1) as f64).sqrt();
        self.loudness_db.push((20.0 * rms.max(1e-6).log10()) as f32);
        self.acc = 0.0;
        self.acc_n = 0;
    }

    /// Waits for ffmpeg; an error carries its last message.
    pub fn finish(mut self) -> Result<Vec<f32>, DecodeError> {
        if self.acc_n > 0 {
            self.push_loudness();
        }
        let status = self.child.wait()?;
        if !status.success() {
            let err = std::fs::read_to_string(self.stderr_path.path()).unwrap_or_default();
            return Err(DecodeError::Ffmpeg(super::process::last_error_line(&err)));
        }
        Ok(std::mem::take(&mut self.loudness_db))
    }

    /// Stops ffmpeg at once.
    pub fn kill(&mut self) {
        kill_group(self.child.id());
        let _ = self.child.wait();
    }
}

impl Drop for PcmStream {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.kill();
        }
    }
}
