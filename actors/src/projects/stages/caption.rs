//! Caption: for each planned clip, reframe into the output frame (the
//! layout chosen or forced, see `projects::reframe`), burn in the word-by-word ASS
//! captions through libass, normalize the audio to −14 LUFS (loudnorm,
//! see `media::loudness`), encode H.264 + AAC with faststart, and write the
//! SRT, WebVTT and JPEG thumbnail. A failed or cancelled run removes every
//! file it wrote.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::ahead::Preframed;
use super::cut::ClipPlan;
use super::fillers;
use super::{StageCtx, StageError};
use crate::captions::ass::{build_ass, line_band, AssOptions};
use crate::captions::subtitles::{cues_from_words, to_srt, to_vtt};
use crate::captions::template::CaptionStyle;
use crate::media::ffprobe::MediaInfo;
use crate::media::fonts;
use crate::media::frame;
use crate::media::loudness;
use crate::media::process::{last_error_line, progress_seconds, run_with_lines};
use crate::projects::reframe::{self, graph, Layout};
use crate::transcript::{display_duration, Transcript, Word};

/// Sample rate of the clips' AAC audio.
const AUDIO_RATE: u32 = loudness::RATE;

#[derive(Clone, Debug)]
pub struct CaptionOptions {
    pub out_dir: PathBuf,
    /// Output size (see `reframe::AspectRatio::size`).
    pub width: u32,
    pub height: u32,
    pub style: CaptionStyle,
    /// Forced, or `auto` to choose per clip.
    pub layout: Layout,
    pub watermark_text: String,
    /// libx264 preset.
    pub x264_preset: String,
    pub crf: u8,
    /// Benchmarks: keep each clip's captions and filter graph in this folder
    /// and append its ffmpeg command to `commands.jsonl` there, so the bare
    /// encodes can be replayed and timed.
    pub replay_dir: Option<PathBuf>,
    /// Spans framed by hand (source seconds; `reframe::manual`), drawn over
    /// each clip's automatic framing.
    pub reframe: Vec<reframe::manual::ManualSpan>,
}

impl CaptionOptions {
    pub fn new(out_dir: PathBuf, style: CaptionStyle) -> Self {
        Self {
            out_dir,
            width: 1080,
            height: 1920,
            style,
            layout: Layout::Auto,
            watermark_text: "clipforge".into(),
            x264_preset: "veryfast".into(),
            crf: 21,
            replay_dir: None,
            reframe: Vec::new(),
        }
    }
}

/// A transcript segment in the contract's display form, on the clip's timeline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Segment {
    pub start: String,
    pub end: String,
    pub text: String,
}

/// A rendered clip and its files.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RenderedClip {
    /// 1-based, as in the file names.
    pub index: usize,
    pub plan: ClipPlan,
    pub video: PathBuf,
    pub srt: PathBuf,
    pub vtt: PathBuf,
    pub thumbnail: PathBuf,
    /// "1080p" for a 1080x1920 clip.
    pub quality: String,
    /// The layout used (never `auto`) and why.
    pub layout: Layout,
    pub layout_reason: String,
    pub segments: Vec<Segment>,
    /// Words on the clip's timeline.
    pub words: Vec<Word>,
    /// Where the clip's time went (for benchmarks).
    #[serde(default)]
    pub seconds: ClipSeconds,
    /// How it was framed, for what: an edit that keeps the range, frame
    /// and layout draws it again without analysing the faces.
    #[serde(default)]
    pub framing: Option<Preframed>,
    /// The ASS captions burned in (`clip-<n>.ass`).
    #[serde(default)]
    pub captions: Option<PathBuf>,
}

/// Wall times of one clip's steps. Faces and loudness run at the same time
/// (`prepare` is about the longer of the two); clip i + 1 is prepared while
/// clip i encodes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClipSeconds {
    /// Face analysis and layout choice (0 when the framing was found
    /// ahead, see `ahead.rs`).
    pub faces: f64,
    /// Loudness measuring and the normalized WAV.
    pub loudness: f64,
    /// Both of the above and the captions file.
    pub prepare: f64,
    /// The encode, thumbnail and subtitles.
    pub encode: f64,
}

/// Removes the files it tracks unless disarmed.
struct Cleanup(Vec<PathBuf>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

pub async fn run_stage(
    input: &Path,
    media: &MediaInfo,
    transcript: &Transcript,
    clips: &[ClipPlan],
    framed: Option<Preframed>,
    opts: &CaptionOptions,
    ctx: &StageCtx,
) -> Result<Vec<RenderedClip>, StageError> {
    ctx.check_cancelled()?;
    std::fs::create_dir_all(&opts.out_dir)
        .map_err(|e| StageError::io("creating the output folder", e))?;
    let work = tempfile::Builder::new()
        .prefix(".clipforge-work-")
        .tempdir_in(&opts.out_dir)
        .map_err(|e| StageError::io("creating a work folder", e))?;
    let mut cleanup = Cleanup(Vec::new());
    let font = fonts::resolve(&opts.style.font_candidates());
    let font: &str = &font;
    let keep = opts.replay_dir.as_deref().unwrap_or(work.path());
    let cancel = &ctx.cancel;
    // A framing found ahead (skip cuts) or kept by an earlier render is the
    // first clip's when it fits; inside the range it was found for, its
    // faces frame the clip without decoding them again.
    let framed = framed.and_then(|f| {
        let c = clips.first()?;
        let (range, out) = ((c.start, c.duration()), (opts.width, opts.height));
        if f.fits(range, out, opts.layout) {
            Some(f)
        } else {
            f.within(range, out, opts.layout)
        }
    });
    let prepare_clip = move |i: usize, framed: Option<Preframed>| {
        prepare(
            input,
            media,
            transcript,
            &clips[i],
            i + 1,
            framed,
            font,
            opts,
            keep,
            cancel,
        )
    };
    let total: f64 = clips
        .iter()
        .map(ClipPlan::kept_duration)
        .sum::<f64>()
        .max(0.001);
    let mut done = 0.0;
    let mut out = Vec::with_capacity(clips.len());
    // Clip i + 1 is analysed (faces, loudness) while clip i encodes.
    let mut next = match clips.is_empty() {
        true => None,
        false => Some(prepare_clip(0, framed).await?),
    };
    for (i, plan) in clips.iter().enumerate() {
        let Some(prepared) = next.take() else { break };
        let base = plan.kept_duration();
        let progress = {
            let p = ctx.progress.clone();
            let offset = done;
            move |f: f64| p.set((offset + f * base) / total)
        };
        let encoding = encode(input, prepared, opts, ctx, &progress, &mut cleanup);
        let clip = if i + 1 < clips.len() {
            let (clip, ahead) = tokio::join!(encoding, prepare_clip(i + 1, None));
            let clip = clip?;
            next = Some(ahead?);
            clip
        } else {
            encoding.await?
        };
        done += base;
        out.push(clip);
    }
    cleanup.0.clear();
    ctx.progress.done();
    Ok(out)
}

/// What a clip's encode needs: its words, framing, captions file and
/// normalized audio (`None`: silent, the source's sound as it is).
struct Prepared {
    index: usize,
    plan: ClipPlan,
    words: Vec<Word>,
    /// As drawn, and as the analysis chose it (before any span by hand).
    framing: reframe::Framing,
    auto: reframe::Framing,
    ass_path: PathBuf,
    audio: Option<PathBuf>,
    seconds: ClipSeconds,
}

/// Frames the clip (unless `framed` ahead) and normalizes its audio (both
/// at once: face analysis decodes the picture, loudness the sound), and
/// writes its captions.
#[allow(clippy::too_many_arguments)]
async fn prepare(
    input: &Path,
    media: &MediaInfo,
    transcript: &Transcript,
    plan: &ClipPlan,
    index: usize,
    framed: Option<Preframed>,
    font: &str,
    opts: &CaptionOptions,
    keep: &Path,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<Prepared, StageError> {
    // The source range (reframed as a whole), and the rendered clip's
    // length once the filler cuts are out.
    let duration = plan.duration();
    let kept = plan.kept_duration();
    // With cuts, every word in the range is looked at, so a removed
    // sentence opener ("Um, so") capitalises the word after it.
    let candidates = if plan.cuts.is_empty() {
        &transcript.words[plan.first_word..plan.end_word.min(transcript.words.len())]
    } else {
        &transcript.words[..]
    };
    // A word the editor left out has empty text.
    let mut words = fillers::clip_words(candidates, plan.start, plan.end, &plan.cuts);
    words.retain(|w| !w.text.trim().is_empty());
    // Filler cuts: audio inside them is dropped before it is measured.
    let (_, audio_cut) = graph::cut_filters(&plan.cuts, plan.start);

    let video = media
        .video
        .as_ref()
        .ok_or_else(|| StageError::InvalidInput("the input has no video track".into()))?;
    let (src_w, src_h) = (video.width, video.height);
    let wav = keep.join(format!("clip-{index}.wav"));
    let started = Instant::now();
    let ((framing, faces_secs), (loud, loudness_secs)) = tokio::try_join!(
        async {
            match framed {
                Some(ahead) => Ok((ahead.framing, 0.0)),
                None => {
                    timed(reframe::frame_clip(
                        input,
                        plan.start,
                        duration,
                        (src_w, src_h),
                        (opts.width, opts.height),
                        opts.layout,
                        cancel,
                        None,
                    ))
                    .await
                }
            }
        },
        timed(loudness::normalize_to_wav(
            input, plan.start, duration, &audio_cut, &wav, cancel
        )),
    )?;
    let auto = framing;
    let framing = reframe::manual::apply(
        &auto,
        &opts.reframe,
        (plan.start, duration),
        (src_w, src_h),
        (opts.width, opts.height),
    );
    tracing::info!(
        clip = index,
        layout = %framing.layout,
        reason = %framing.reason,
        loudness_before = loud.as_ref().map(|l| l.before),
        loudness_after = loud.as_ref().map(|l| l.after),
        "clip prepared"
    );

    // The captions go where no face is drawn (the template's height when
    // it is free).
    let mut style = opts.style.clone();
    style.position_y = reframe::keepout::caption_y(
        &framing.faces,
        (opts.width, opts.height),
        line_band(&style, opts.width, opts.height),
        style.position_y,
        framing.layout == Layout::Split,
    );
    if style.position_y != opts.style.position_y {
        tracing::info!(
            clip = index,
            from = opts.style.position_y,
            to = style.position_y,
            "captions moved off the faces"
        );
    }
    let ass_path = keep.join(format!("clip-{index}.ass"));
    let ass = build_ass(
        &words,
        &style,
        &AssOptions {
            width: opts.width,
            height: opts.height,
            font_name: font.to_string(),
            watermark_text: opts.watermark_text.clone(),
            duration: kept,
        },
    );
    std::fs::write(&ass_path, ass).map_err(|e| StageError::io("writing captions", e))?;
    Ok(Prepared {
        index,
        plan: plan.clone(),
        words,
        framing,
        auto,
        ass_path,
        audio: loud.map(|_| wav),
        seconds: ClipSeconds {
            faces: faces_secs,
            loudness: loudness_secs,
            prepare: started.elapsed().as_secs_f64(),
            encode: 0.0,
        },
    })
}

/// `fut`'s result and its wall time in seconds.
async fn timed<T, E>(fut: impl std::future::Future<Output = Result<T, E>>) -> Result<(T, f64), E> {
    let started = Instant::now();
    let out = fut.await?;
    Ok((out, started.elapsed().as_secs_f64()))
}

/// The clip's single encode (picture through the layout's graph and the
/// captions, sound from the normalized WAV), then its thumbnail and
/// subtitles.
async fn encode(
    input: &Path,
    prepared: Prepared,
    opts: &CaptionOptions,
    ctx: &StageCtx,
    progress: &(dyn Fn(f64) + Send + Sync),
    cleanup: &mut Cleanup,
) -> Result<RenderedClip, StageError> {
    let Prepared {
        index,
        plan,
        words,
        framing,
        auto,
        ass_path,
        audio,
        mut seconds,
    } = prepared;
    let started = Instant::now();
    let duration = plan.duration();
    let kept = plan.kept_duration();
    progress(0.05);
    // Filler cuts: frames inside them are dropped before the captions are
    // burned in (the reframe works on the whole range); the normalized WAV
    // is already cut.
    let (video_cut, audio_cut) = graph::cut_filters(&plan.cuts, plan.start);
    let graph = graph::filter_graph(
        &framing.composition,
        (opts.width, opts.height),
        &ass_path,
        &video_cut,
    );
    let (graph, audio_input, audio_map) = match &audio {
        Some(wav) => (
            graph,
            vec!["-i".to_string(), wav.to_string_lossy().into_owned()],
            "1:a:0",
        ),
        None if audio_cut.is_empty() => (graph, Vec::new(), "0:a:0"),
        None => (
            format!("{graph};\n[0:a:0]{audio_cut}[a]"),
            Vec::new(),
            "[a]",
        ),
    };
    let script = ass_path.with_extension("filter");
    std::fs::write(&script, graph).map_err(|e| StageError::io("writing the filter graph", e))?;

    let final_video = opts.out_dir.join(format!("clip-{index}.mp4"));
    let part = opts.out_dir.join(format!(".clip-{index}.mp4.part"));
    // The thumbnail's frame is made a key frame, so taking it after the
    // encode decodes that one frame (not up to a GOP of 1080p frames).
    let thumb_at = (kept * 0.3).min(kept - 0.1).max(0.0);
    cleanup.0.push(part.clone());
    let args: Vec<String> = vec![
        "-nostdin",
        "-y",
        "-v",
        "error",
        "-ss",
        &format!("{:.3}", plan.start),
        "-t",
        &format!("{duration:.3}"),
        "-i",
        &input.to_string_lossy(),
    ]
    .into_iter()
    .map(String::from)
    .chain(audio_input)
    .chain(
        [
            "-filter_complex_script",
            &script.to_string_lossy(),
            "-map",
            "[v]",
            "-map",
            audio_map,
            "-c:v",
            "libx264",
            "-preset",
            &opts.x264_preset,
            "-crf",
            &opts.crf.to_string(),
            "-pix_fmt",
            "yuv420p",
            "-force_key_frames",
            &format!("{thumb_at:.3}"),
            "-c:a",
            "aac",
            "-b:a",
            "128k",
            "-ac",
            "2",
            "-ar",
            &AUDIO_RATE.to_string(),
            "-movflags",
            "+faststart",
            "-progress",
            "pipe:1",
            "-nostats",
            "-f",
            "mp4",
            &part.to_string_lossy(),
        ]
        .into_iter()
        .map(String::from),
    )
    .collect();
    if let Some(dir) = &opts.replay_dir {
        let mut replay = args.clone();
        if let Some(last) = replay.last_mut() {
            *last = dir
                .join(format!("clip-{index}.mp4"))
                .to_string_lossy()
                .into_owned();
        }
        let line = serde_json::to_string(&replay).unwrap_or_default() + "\n";
        use std::io::Write as _;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("commands.jsonl"))
            .and_then(|mut f| f.write_all(line.as_bytes()))
            .map_err(|e| StageError::io("writing the replay log", e))?;
    }
    let finished = run_with_lines("ffmpeg", &args, &ctx.cancel, |line| {
        if let Some(t) = progress_seconds(line) {
            progress(0.05 + 0.9 * t / kept.max(0.001));
        }
    })
    .await?;
    if !finished.status.success() {
        return Err(StageError::tool(
            "ffmpeg",
            format!(
                "encoding clip {index}: {}",
                last_error_line(&finished.stderr)
            ),
        ));
    }
    cleanup.0.push(final_video.clone());
    std::fs::rename(&part, &final_video).map_err(|e| StageError::io("saving the clip", e))?;

    let thumbnail = opts.out_dir.join(format!("clip-{index}.jpg"));
    cleanup.0.push(thumbnail.clone());
    frame::grab(
        &final_video,
        thumb_at,
        &thumbnail,
        None,
        &format!("thumbnail of clip {index}"),
        &ctx.cancel,
    )
    .await?;

    let mut cues = cues_from_words(&words);
    for c in &mut cues {
        c.end = c.end.min(kept);
        c.start = c.start.min(c.end);
    }
    let captions = opts.out_dir.join(format!("clip-{index}.ass"));
    cleanup.0.push(captions.clone());
    std::fs::copy(&ass_path, &captions).map_err(|e| StageError::io("keeping the captions", e))?;
    let srt = opts.out_dir.join(format!("clip-{index}.srt"));
    let vtt = opts.out_dir.join(format!("clip-{index}.vtt"));
    cleanup.0.push(srt.clone());
    cleanup.0.push(vtt.clone());
    std::fs::write(&srt, to_srt(&cues)).map_err(|e| StageError::io("writing subtitles", e))?;
    std::fs::write(&vtt, to_vtt(&cues)).map_err(|e| StageError::io("writing subtitles", e))?;
    progress(1.0);
    seconds.encode = started.elapsed().as_secs_f64();
    let used = Preframed {
        start: plan.start,
        duration,
        width: opts.width,
        height: opts.height,
        requested: opts.layout,
        framing: auto,
        manual: opts.reframe.clone(),
        seconds: seconds.faces,
    };

    let segments = crate::transcript::sentences_from_words(&words)
        .into_iter()
        .map(|s| Segment {
            start: display_duration(s.start),
            end: display_duration(s.end),
            text: s.text,
        })
        .collect();
    Ok(RenderedClip {
        index,
        plan,
        video: final_video,
        srt,
        vtt,
        thumbnail,
        quality: quality_label(opts.width, opts.height),
        layout: framing.layout,
        layout_reason: framing.reason,
        segments,
        words,
        seconds,
        framing: Some(used),
        captions: Some(captions),
    })
}

/// "1080p" for 1080x1920, "720p" for 720x1280…: the short side.
pub fn quality_label(w: u32, h: u32) -> String {
    format!("{}p", w.min(h))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quality_is_short_side() {
        assert_eq!(quality_label(1080, 1920), "1080p");
        assert_eq!(quality_label(720, 1280), "720p");
    }
}
