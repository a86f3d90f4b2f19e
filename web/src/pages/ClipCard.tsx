import { useState } from "preact/hooks";
import { api, ok } from "../api/client";
import type { Clip, Integration } from "../api/models";
import { reasonText } from "../api/reasons";
import { clock, ErrorBox, useAction } from "../components/ui";
import { t, type Key } from "../i18n";
import { ScheduleOne } from "./ScheduleForms";

export function ClipCard({ clip, integrations }: { clip: Clip; integrations: Integration[] | undefined }) {
  const [scheduling, setScheduling] = useState(false);
  const [title, setTitle] = useState(clip.title);
  const [renaming, setRenaming] = useState(false);
  const [draft, setDraft] = useState(clip.title);
  const rename = useAction();
  const hid = `clip-${clip.id}`;
  async function saveTitle(e: Event) {
    e.preventDefault();
    const done = await rename.run(async () => {
      const edited = (await ok(
        api.PATCH("/projects/{id}/clips/{clip_id}", {
          params: { path: { id: clip.projectId, clip_id: clip.id } },
          body: { title: draft },
        }),
      )) as Clip;
      setTitle(edited.title);
    });
    if (done) setRenaming(false);
  }
  return (
    <article class="card clip" aria-labelledby={hid}>
      <video controls preload="metadata" playsInline src={clip.url} poster={clip.thumbnail} aria-label={title}>
        <track kind="captions" src={clip.vttUrl} srclang="und" label={t("transcript")} />
      </video>
      <div class="card-body">
        <h3 id={hid}>{title}</h3>
        {renaming ? (
          <form class="stack inset" onSubmit={saveTitle} aria-label={t("renameClip")}>
            <label>
              {t("clipTitle")}
              <input type="text" required maxLength={100} value={draft} onInput={(e) => setDraft(e.currentTarget.value)} />
            </label>
            <div class="row">
              <button type="submit">{t("save")}</button>
              <button type="button" class="secondary" onClick={() => { setRenaming(false); setDraft(title); rename.setError(null); }}>
                {t("cancel")}
              </button>
            </div>
            <ErrorBox error={rename.error} />
          </form>
        ) : (
          <div class="row">
            <button type="button" class="secondary small" onClick={() => setRenaming(true)} aria-label={`${t("renameClip")}: ${title}`}>
              {t("renameClip")}
            </button>
            <a class="button secondary small" href={`/projects/${clip.projectId}/clips/${clip.id}/edit`} aria-label={`${t("editClip")}: ${title}`}>
              {t("editClip")}
            </a>
          </div>
        )}
        {clip.status !== "ready" && (
          <p class={clip.status === "failed" ? "error small" : "small muted"} role="status">
            {clip.status === "failed" ? t("renderFailed", { m: clip.renderError ?? "" }) : t("rendering")}
          </p>
        )}
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
              <strong>{t("whyPicked")}:</strong> {reasonText(clip.reason, clip.scores)}
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
          <a class="button secondary" href={clip.url} download={`${title}.mp4`}>
            {t("downloadMp4")}
          </a>
          <a class="button secondary" href={clip.subtitleUrl} download={`${title}.srt`}>
            {t("downloadSrt")}
          </a>
          <a class="button secondary" href={clip.vttUrl} download={`${title}.vtt`}>
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
