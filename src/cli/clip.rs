//! `clipforge clip`: the pipeline as a command, with progress per stage (bars
//! on a terminal, plain lines otherwise).

use clipforge_actors::tasks::blocking_caught;
use std::collections::BTreeMap;
use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clipforge_actors::captions::template::{CaptionStyle, PRESETS};
use clipforge_actors::media::whisper::{ModelOptions, WhisperModel};
use clipforge_actors::projects::export;
use clipforge_actors::projects::pipeline::{self, PipelineOptions};
use clipforge_actors::projects::reframe::{AspectRatio, Layout};
use clipforge_actors::projects::stages::caption::CaptionOptions;
use clipforge_actors::projects::stages::rerank::RerankConfig;
use clipforge_actors::projects::stages::score::preset_range;
use clipforge_actors::projects::stages::steer::MAX_PROMPT_CHARS;
use clipforge_actors::projects::stages::{Stage, StageError};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use tokio_util::sync::CancellationToken;

use super::model_args::ModelArgs;

#[derive(clap::Args, Debug)]
pub struct ClipArgs {
    /// A video file, or a YouTube/Vimeo URL.
    pub input: String,
    /// Output folder.
    #[arg(long, default_value = "clips")]
    pub out: PathBuf,
    /// Clip length: auto (20–60 s, shorter for a short video), 15-30, 30-60
    /// or 60-90.
    #[arg(long, default_value = "auto")]
    pub preset: String,
    /// Caption template: a preset name (default, shorts, karaoke, minimal, bold) or a JSON file.
    #[arg(long, default_value = "default")]
    pub template: String,
    /// Transcribe and caption the selected range as one clip, without cutting.
    #[arg(long)]
    pub skip_cuts: bool,
    /// At most this many clips.
    #[arg(long, default_value_t = 10)]
    pub max_clips: usize,
    /// Process only the first SECS seconds.
    #[arg(long, value_name = "SECS")]
    pub duration: Option<f64>,
    /// Spoken language (ISO code such as en); detected when omitted.
    #[arg(long, value_name = "CODE")]
    pub language: Option<String>,
    /// Layout: auto (chosen per clip), single, split, speaker, screen or fit.
    #[arg(long, default_value = "auto")]
    pub layout: String,
    /// Aspect ratio of the clips: 9:16, 1:1, 4:5 or 16:9.
    #[arg(long, default_value = "9:16")]
    pub aspect: String,
    /// Output size WxH (default: the aspect ratio's, short side 1080).
    #[arg(long)]
    pub size: Option<String>,
    /// Force the watermark on (as the free plan does).
    #[arg(long)]
    pub watermark: bool,
    /// What the clips should be about ("the part about pricing"): moments
    /// that say the prompt's words and phrases score higher (at most 500 characters).
    #[arg(long, value_name = "TEXT")]
    pub prompt: Option<String>,
    /// Cut filler words (um, uh, erm, hmm, and "you know" / "I mean" set
    /// off by pauses or commas) out of the clips' audio and video; the
    /// captions, subtitles and durations follow the cut clips.
    #[arg(long)]
    pub remove_fillers: bool,
    /// OpenAI-compatible endpoint for the optional re-ranker (e.g. http://127.0.0.1:8000/v1;
    /// default: `rerank_url` of the [pipeline] config).
    #[arg(long, env = "CLIPFORGE_RERANK_URL")]
    pub rerank_url: Option<String>,
    #[arg(long, env = "CLIPFORGE_RERANK_MODEL", default_value = "gpt-4o-mini")]
    pub rerank_model: String,
    #[arg(long, env = "CLIPFORGE_RERANK_API_KEY", hide_env_values = true)]
    pub rerank_api_key: Option<String>,
    /// Also write project.fcpxml, project.edl and project.otio (the clips'
    /// in/out in the source, for a video editor) into the output folder.
    #[arg(long)]
    pub export: bool,
    /// Print the result summary as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Benchmarks: keep each clip's filter graph and ffmpeg command here.
    #[arg(long, hide = true)]
    pub replay_dir: Option<PathBuf>,
    #[command(flatten)]
    pub model: ModelArgs,
}

fn usage_error(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(2)
}

/// Why `--template` names no usable caption style.
#[derive(Debug, thiserror::Error)]
enum StyleError {
    #[error("cannot read template {spec}: {source}")]
    Read {
        spec: String,
        #[source]
        source: std::io::Error,
    },
    #[error("template {spec} is not valid JSON: {source}")]
    Json {
        spec: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("unknown template {0:?}: use one of {presets} or a .json file", presets = PRESETS.join(", "))]
    Unknown(String),
}

fn load_style(spec: &str) -> Result<CaptionStyle, StyleError> {
    let path = std::path::Path::new(spec);
    if spec.ends_with(".json") || path.is_file() {
        let text = std::fs::read_to_string(path).map_err(|source| StyleError::Read {
            spec: spec.to_string(),
            source,
        })?;
        return CaptionStyle::from_json(&text).map_err(|source| StyleError::Json {
            spec: spec.to_string(),
            source,
        });
    }
    CaptionStyle::preset(spec).ok_or_else(|| StyleError::Unknown(spec.to_string()))
}

fn parse_size(s: &str) -> Option<(u32, u32)> {
    let (w, h) = s.split_once(['x', 'X'])?;
    let (w, h): (u32, u32) = (w.parse().ok()?, h.parse().ok()?);
    ((16..=4096).contains(&w) && (16..=4096).contains(&h)).then_some((w / 2 * 2, h / 2 * 2))
}

/// Stage progress on stderr.
struct Display {
    bars: Option<(MultiProgress, BTreeMap<Stage, ProgressBar>)>,
    last: Mutex<BTreeMap<Stage, u8>>,
}

impl Display {
    fn new() -> Self {
        let bars = std::io::stderr().is_terminal().then(|| {
            let multi = MultiProgress::new();
            let style = ProgressStyle::with_template("{prefix:>10} [{bar:32}] {pos:>3}%")
                .expect("valid template")
                .progress_chars("=> ");
            let bars = Stage::ALL
                .iter()
                .map(|s| {
                    let bar = multi.add(ProgressBar::new(100));
                    bar.set_style(style.clone());
                    bar.set_prefix(s.name());
                    (*s, bar)
                })
                .collect();
            (multi, bars)
        });
        Self {
            bars,
            last: Mutex::new(BTreeMap::new()),
        }
    }

    fn report(&self, stage: Stage, pct: u8) {
        match &self.bars {
            Some((_, bars)) => {
                if let Some(b) = bars.get(&stage) {
                    b.set_position(pct as u64);
                }
            }
            None => {
                let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
                let prev = last.get(&stage).copied();
                // Plain lines: every 10 % step, and the start and end.
                if prev.is_none() || pct == 100 || pct / 10 > prev.unwrap_or(0) / 10 {
                    eprintln!("[{stage}] {pct}%");
                    last.insert(stage, pct);
                }
            }
        }
    }

    fn finish(&self) {
        if let Some((_, bars)) = &self.bars {
            for b in bars.values() {
                b.finish();
            }
        }
    }
}

/// The editor timelines over the input (a `file://` URL for a local file).
fn write_export(args: &ClipArgs, r: &pipeline::PipelineResult) -> std::io::Result<()> {
    let is_url = args.input.starts_with("http://") || args.input.starts_with("https://");
    let path = std::path::Path::new(&args.input);
    let (name, url) = if is_url {
        (args.input.clone(), args.input.clone())
    } else {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        (
            name.unwrap_or_else(|| args.input.clone()),
            export::file_url(path),
        )
    };
    let t = export::from_rendered(&name, &url, &r.media, &r.transcript.language, &r.clips);
    export::write_all(&args.out, &t).map(|_| ())
}

/// Peak resident memory of this process (children such as ffmpeg excluded).
fn peak_rss_mb() -> f64 {
    // SAFETY: getrusage only writes into the struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return 0.0;
    }
    usage.ru_maxrss as f64 / 1024.0
}

pub async fn run(args: ClipArgs) -> ExitCode {
    let Some(range) = preset_range(&args.preset) else {
        return usage_error(format!(
            "unknown preset {:?}: use auto, 15-30, 30-60 or 60-90",
            args.preset
        ));
    };
    let mut style = match load_style(&args.template) {
        Ok(s) => s,
        Err(e) => return usage_error(e),
    };
    if args.watermark {
        style.watermark_enabled = true;
    }
    let layout: Layout = match args.layout.parse() {
        Ok(l) => l,
        Err(e) => return usage_error(e),
    };
    let aspect: AspectRatio = match args.aspect.parse() {
        Ok(a) => a,
        Err(e) => return usage_error(e),
    };
    let (width, height) = match args.size.as_deref() {
        None => aspect.size(),
        Some(size) => match parse_size(size) {
            Some(s) => s,
            None => return usage_error(format!("bad --size {size:?}: use WxH, e.g. 1080x1920")),
        },
    };
    if let Some(d) = args.duration {
        if !(d.is_finite() && d > 0.0) {
            return usage_error("--duration must be a positive number of seconds");
        }
    }
    let prompt = args
        .prompt
        .as_deref()
        .map(str::trim)
        .filter(|p| !p.is_empty());
    if prompt.is_some_and(|p| p.chars().count() > MAX_PROMPT_CHARS) {
        return usage_error(format!(
            "--prompt is longer than {MAX_PROMPT_CHARS} characters"
        ));
    }
    if let Some(dir) = &args.replay_dir {
        if let Err(e) = std::fs::create_dir_all(dir) {
            return usage_error(format!("--replay-dir {}: {e}", dir.display()));
        }
    }
    let pipeline = match args.model.pipeline() {
        Ok(p) => p,
        Err(e) => return usage_error(format!("configuration: {e}")),
    };
    let model_opts = ModelOptions {
        threads: pipeline.threads,
        compute_type: pipeline.compute_type.clone(),
        beam_size: pipeline.beam_size,
    };
    let dir = pipeline
        .model_dir
        .clone()
        .unwrap_or_else(crate::config::default_model_dir);
    // The model loads while the input is fetched and probed.
    let model = async move {
        let loading = std::time::Instant::now();
        let model = blocking_caught(move || WhisperModel::load(&dir, &model_opts))
            .await
            .map_err(|e| StageError::Model(format!("loading the model stopped: {e}")))?
            .map_err(|e| StageError::Model(format!("{e:#}")))?;
        tracing::debug!(secs = loading.elapsed().as_secs_f64(), "model loaded");
        Ok::<_, StageError>(Arc::new(model))
    };
    let mut caption = CaptionOptions::new(args.out.clone(), style.clone());
    caption.width = width;
    caption.height = height;
    caption.layout = layout;
    caption.x264_preset = pipeline.x264_preset.clone();
    caption.replay_dir = args.replay_dir.clone();
    let opts = PipelineOptions {
        out_dir: args.out.clone(),
        range,
        flexible_range: args.preset == "auto",
        max_clips: args.max_clips,
        skip_cuts: args.skip_cuts,
        duration: args.duration,
        language: args.language.clone(),
        style,
        caption: Some(caption),
        batch_size: pipeline.batch_size,
        rerank: args
            .rerank_url
            .clone()
            .map(|base_url| RerankConfig {
                base_url,
                api_key: args.rerank_api_key.clone(),
                model: args.rerank_model.clone(),
                timeout: Duration::from_secs(60),
            })
            .or_else(|| pipeline.rerank()),
        prompt: prompt.map(str::to_string),
        remove_fillers: args.remove_fillers,
    };

    let cancel = CancellationToken::new();
    {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending().await } } => {}
            }
            cancel.cancel();
        });
    }
    let display = Arc::new(Display::new());
    let d2 = display.clone();
    let started = std::time::Instant::now();
    let result = pipeline::run_loading(
        &args.input,
        model,
        &opts,
        cancel,
        Arc::new(move |s, p| d2.report(s, p)),
    )
    .await;
    display.finish();
    match result {
        Ok(r) => {
            if args.export {
                if let Err(e) = write_export(&args, &r) {
                    eprintln!("error: writing the editor export: {e}");
                    return ExitCode::FAILURE;
                }
            }
            if args.json {
                let summary = serde_json::json!({
                    "outDir": args.out,
                    "clips": r.clips.len(),
                    "layouts": r.clips.iter().map(|c| c.layout.as_str()).collect::<Vec<_>>(),
                    "language": r.transcript.language,
                    "stageSeconds": r.times,
                    "totalSeconds": started.elapsed().as_secs_f64(),
                    "peakRssMb": peak_rss_mb(),
                });
                println!("{summary}");
            } else {
                eprintln!(
                    "{} clip(s) in {} ({:.1} s): transcribed {:.0} s of {} speech",
                    r.clips.len(),
                    args.out.display(),
                    started.elapsed().as_secs_f64(),
                    r.transcript.duration,
                    r.transcript.language
                );
                for c in &r.clips {
                    let s = &c.plan.scores;
                    eprintln!(
                        "  clip-{}.mp4  score {:>3}  {:<7}  {}  ({})\n      hook {} · completeness {} · emotion {} · pace {}{}\n      {}",
                        c.index,
                        c.plan.score,
                        c.layout,
                        c.plan.title,
                        c.layout_reason,
                        s.hook,
                        s.completeness,
                        s.emotion,
                        s.pace,
                        s.prompt_match
                            .map(|m| format!(" · prompt {m}"))
                            .unwrap_or_default(),
                        c.plan.reason
                    );
                }
            }
            ExitCode::SUCCESS
        }
        Err(StageError::Cancelled) => {
            eprintln!("cancelled");
            ExitCode::from(130)
        }
        Err(e @ (StageError::InvalidInput(_) | StageError::NoClips(_))) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
