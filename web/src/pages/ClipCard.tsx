import { useState } from "preact/hooks";
import type { Clip, Integration } from "../api/models";
import { clock } from "../components/ui";
import { t, type Key } from "../i18n";
import { ScheduleOne } from "./ScheduleForms";

export function ClipCard({ clip, integrations }: { clip: Clip; integrations: Integration[] | undefined }) {
  const [scheduling, setScheduling] = useState(false);
  const hid = `clip-${clip.id}`;
  return (
    <article class="card clip" aria-labelledby={hid}>
      <video controls preload="metadata" playsInline src={clip.url} poster={clip.thumbnail} aria-label={clip.title}>
        <track kind="captions" src={clip.vttUrl} srclang="und" label={t("transcript")} />
      </video>
      <div class="card-body">
        <h3 id={hid}>{clip.title}</h3>
        <p class="meta">
          <span class="score" title={t("score", { n: Math.round(clip.score) })}>
            {t("score", { n: Math.round(clip.score) })}
          </span>{" "}
          · {clock(clip.startSec)}–{clock(clip.endSec)} ({clip.duration}) · {clip.quality}
        </p>
        <p class="small muted">{t("framedAs", { l: t(("layout_" + clip.layout) as Key) })}</p>
        {clip.reason && (
          <div class="reason">
            <p>
              <strong>{t("whyPicked")}:</strong> {clip.reason}
            </p>
            <ul class="scores" aria-label={t("subScores")}>
              {SUB_SCORES.filter((k) => clip.scores[k] != null).map((k) => (
                <li key={k}>
                  {t(("score_" + k) as Key)} <strong>{clip.scores[k]}</strong>
                </li>
              ))}
            </ul>
          </div>
        )}
        <div class="downloads">
          <a class="button secondary" href={clip.url} download={`${clip.title}.mp4`}>
            {t("downloadMp4")}
          </a>
          <a class="button secondary" href={clip.subtitleUrl} download={`${clip.title}.srt`}>
            {t("downloadSrt")}
          </a>
          <a class="button secondary" href={clip.vttUrl} download={`${clip.title}.vtt`}>
            {t("downloadVtt")}
          </a>
          <button type="button" onClick={() => setScheduling(!scheduling)} aria-expanded={scheduling}>
            {t("scheduleClip")}
          </button>
        </div>
        {scheduling && (
          <ScheduleOne clip={clip} integrations={integrations} onDone={() => setScheduling(false)} />
        )}
        <details>
          <summary>{t("transcript")}</summary>
          <ol class="transcript">
            {clip.transcripts.map((s) => (
              <li key={s.id}>
                <span class="muted">
                  {s.start}–{s.end}
                </span>{" "}
                {s.text}
              </li>
            ))}
          </ol>
        </details>
      </div>
    </article>
  );
}

/** The sub-scores of a clip, in the order shown. */
const SUB_SCORES = ["hook", "completeness", "emotion", "pace", "promptMatch"] as const;
