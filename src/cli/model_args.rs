//! The model flags `clipforge clip` and `clipforge transcribe` share
//! ([`ModelArgs`]).

use std::path::PathBuf;

use figment::value::Value;

use crate::config::{Config, ConfigError, PipelineConfig};

/// Where the Whisper model lives and how it runs: the `[pipeline]`
/// settings, layered like the server's (defaults → the config file →
/// `CLIPFORGE_PIPELINE_*` → these flags; `crate::config`).
#[derive(clap::Args, Debug, Clone)]
pub struct ModelArgs {
    /// Config file read for `[pipeline]` (missing file = defaults).
    #[arg(long, env = "CLIPFORGE_CONFIG", default_value = "cluster.toml")]
    pub config: PathBuf,
    /// CTranslate2 Whisper model directory (model.bin, config.json,
    /// tokenizer.json) [env: CLIPFORGE_PIPELINE_MODEL_DIR].
    #[arg(long = "model")]
    pub model_dir: Option<PathBuf>,
    /// CPU threads for speech recognition, 0 = all cores
    /// [env: CLIPFORGE_PIPELINE_THREADS; default 0].
    #[arg(long)]
    pub threads: Option<usize>,
    /// int8, int8_float32, float32 or default
    /// [env: CLIPFORGE_PIPELINE_COMPUTE_TYPE; default int8].
    #[arg(long)]
    pub compute_type: Option<String>,
    /// Beam size for decoding [env: CLIPFORGE_PIPELINE_BEAM_SIZE; default 5].
    #[arg(long)]
    pub beam_size: Option<usize>,
    /// 30 s windows decoded together [env: CLIPFORGE_PIPELINE_BATCH_SIZE; default 8].
    #[arg(long)]
    pub batch_size: Option<usize>,
    /// libx264 preset for the clips [env: CLIPFORGE_PIPELINE_X264_PRESET; default veryfast].
    #[arg(long)]
    pub x264_preset: Option<String>,
}

impl ModelArgs {
    /// The `[pipeline]` settings with these flags on top.
    pub fn pipeline(&self) -> Result<PipelineConfig, ConfigError> {
        let mut flags: Vec<(&str, Value)> = Vec::new();
        if let Some(d) = &self.model_dir {
            flags.push(("pipeline.model_dir", d.display().to_string().into()));
        }
        if let Some(v) = self.threads {
            flags.push(("pipeline.threads", v.into()));
        }
        if let Some(v) = &self.compute_type {
            flags.push(("pipeline.compute_type", v.clone().into()));
        }
        if let Some(v) = self.beam_size {
            flags.push(("pipeline.beam_size", v.into()));
        }
        if let Some(v) = self.batch_size {
            flags.push(("pipeline.batch_size", v.into()));
        }
        if let Some(v) = &self.x264_preset {
            flags.push(("pipeline.x264_preset", v.clone().into()));
        }
        Config::load(Some(&self.config), &flags).map(|c| c.pipeline)
    }
}
