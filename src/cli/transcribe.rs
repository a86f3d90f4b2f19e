//! `clipforge transcribe`: only the transcription stage on a local file —
//! the words, their times and the language — as JSON on stdout (the
//! `transcript.json` of `clipforge clip`, with the seconds it took).
//! `make bench-asr` compares it with faster-whisper.

use clipforge_actors::tasks::blocking_caught;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clipforge_actors::media::whisper::{ModelOptions, WhisperModel};
use clipforge_actors::projects::stages::transcribe::{self, TranscribeOptions};
use clipforge_actors::projects::stages::{Progress, StageCtx, StageError};
use tokio_util::sync::CancellationToken;

use super::model_args::ModelArgs;

#[derive(clap::Args, Debug)]
pub struct TranscribeArgs {
    /// A local audio or video file.
    pub input: PathBuf,
    /// Spoken language (ISO code such as en), used as given; detected when
    /// omitted.
    #[arg(long, value_name = "CODE")]
    pub language: Option<String>,
    /// When detecting: the language the source declares (e.g. its
    /// metadata's), a prior the audio can overrule.
    #[arg(long, value_name = "CODE", conflicts_with = "language")]
    pub language_hint: Option<String>,
    #[command(flatten)]
    pub model: ModelArgs,
}

pub async fn run(args: TranscribeArgs) -> ExitCode {
    let pipeline = match args.model.pipeline() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: configuration: {e}");
            return ExitCode::from(2);
        }
    };
    if !args.input.is_file() {
        eprintln!("error: {} is not a file", args.input.display());
        return ExitCode::from(2);
    }
    let opts = ModelOptions {
        threads: pipeline.threads,
        compute_type: pipeline.compute_type.clone(),
        beam_size: pipeline.beam_size,
    };
    let dir = pipeline
        .model_dir
        .clone()
        .unwrap_or_else(crate::config::default_model_dir);
    let model = match blocking_caught(move || WhisperModel::load(&dir, &opts)).await {
        Ok(Ok(m)) => Arc::new(m),
        Ok(Err(e)) => {
            eprintln!("error: {e:#}");
            return ExitCode::FAILURE;
        }
        Err(e) => {
            eprintln!("error: loading the model stopped: {e}");
            return ExitCode::FAILURE;
        }
    };
    let started = std::time::Instant::now();
    let ctx = StageCtx::new(CancellationToken::new(), Progress::silent());
    let options = TranscribeOptions {
        language: args.language.clone(),
        language_hint: args.language_hint.clone(),
        batch_size: pipeline.batch_size,
        ..TranscribeOptions::default()
    };
    match transcribe::run(&args.input, model, options, &ctx).await {
        Ok(out) => {
            let mut json = match serde_json::to_value(&out.transcript) {
                Ok(v) => v,
                Err(e) => {
                    eprintln!("error: encoding the transcript: {e}");
                    return ExitCode::FAILURE;
                }
            };
            json["seconds"] = started.elapsed().as_secs_f64().into();
            json["modelSeconds"] = out.model_secs.into();
            println!("{json}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            let input_error = matches!(e, StageError::InvalidInput(_));
            ExitCode::from(if input_error { 2 } else { 1 })
        }
    }
}
