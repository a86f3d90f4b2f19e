// The clip editor (issue 29): the current version plays with the captions
// drawn live over it as HTML from the words as edited (nothing renders
// until Save); words are buttons — pick one to fix its text or to start or
// end the clip on it; the range can also be typed or nudged by 0.1 s;
// title, layout, frame shape and caption template; Save renders a new
// version (its progress from the project's status stream); the version
// history restores an earlier one. The timeline draws the sound around the
// clip with handles for its range; the face picker sets the crop per shot.
import { useEffect, useRef, useState } from "preact/hooks";
import { api, ok } from "../api/client";
import type { Clip, ProjectDetail, RenderEvent, TemplateList } from "../api/models";
import { FacePicker, type Faces, type Picks } from "../components/FacePicker";
import { Timeline, type Waveform } from "../components/Timeline";
import { clock, ErrorBox, Loading, Page, Progress, useAction, useLoad } from "../components/ui";
import { t, type Key } from "../i18n";

type Word = { index: number; text: string; startSec: number; endSec: number };
type Version = { version: number; current: boolean; title: string; startSec: number; endSec: number; layout: string; url: string; createdAt: string };

const LAYOUTS = ["auto", "single", "split", "speaker", "screen", "fit"] as const;
const ASPECTS = ["9:16", "1:1", "4:5", "16:9"] as const;
const PRESETS = ["default", "shorts", "karaoke", "minimal", "bold"];

export function ClipEditor({ projectId, clipId }: { projectId: string; clipId: string }) {
  const project = useLoad(
    () => ok(api.GET("/projects/{id}", { params: { path: { id: projectId } } })) as Promise<ProjectDetail>,
    [projectId],
  );
  const clip = project.data?.clips.find((c) => c.id === clipId);
  if (project.error) return <Page title={t("editClip")}><ErrorBox error={project.error} /></Page>;
  if (!project.data) return <Loading />;
  if (!clip) return <Page title={t("editClip")}><p class="error">{t("notFound")}</p></Page>;
  return <Editor key={`${clip.id}-${clip.version}-${clip.status}`} clip={clip} reload={project.reload} />;
}

function Editor({ clip, reload }: { clip: Clip; reload: () => void }) {
  const path = { id: clip.projectId, clip_id: clip.id };
  const words = useLoad(
    () => ok(api.GET("/projects/{id}/clips/{clip_id}/words", { params: { path } })) as Promise<{ words: Word[] }>,
    [clip.id, clip.version],
  );
  const versions = useLoad(
    () => ok(api.GET("/projects/{id}/clips/{clip_id}/versions", { params: { path } })) as Promise<{ versions: Version[] }>,
    [clip.id, clip.version],
  );
  const templates = useLoad(() => ok(api.GET("/caption-templates")) as Promise<TemplateList>, []);
  const wave = useLoad(
    () => ok(api.GET("/projects/{id}/clips/{clip_id}/waveform", { params: { path } })) as Promise<Waveform>,
    [clip.id, clip.version],
  );
  const faces = useLoad(
    () => ok(api.GET("/projects/{id}/clips/{clip_id}/faces", { params: { path } })) as Promise<Faces>,
    [clip.id, clip.version],
  );
  const [picks, setPicks] = useState<Picks>({});
  const [clearFraming, setClearFraming] = useState(false);
  const [title, setTitle] = useState(clip.title);
  const [start, setStart] = useState(clip.startSec);
  const [end, setEnd] = useState(clip.endSec);
  const [fixes, setFixes] = useState<Record<number, string>>({});
  const [picked, setPicked] = useState<number | null>(null);
  const [layout, setLayout] = useState<string>("");
  const [aspect, setAspect] = useState<string>("");
  const [template, setTemplate] = useState<string>("");
  const [time, setTime] = useState(0);
  // The version being rendered and its percent.
  const [target, setTarget] = useState<number | null>(clip.status === "rendering" ? clip.version : null);
  const [percent, setPercent] = useState(0);
  const rendering = target === null ? null : percent;
  const save = useAction();
  const video = useRef<HTMLVideoElement>(null);

  // While a version renders: its progress from the project's status
  // stream (which replays the project's earlier events first), then the
  // new version; a slow poll covers a stream that drops.
  useEffect(() => {
    if (target === null) return;
    const es = new EventSource(`/api/projects/${encodeURIComponent(clip.projectId)}/status`);
    es.addEventListener("render", (ev) => {
      const e = JSON.parse((ev as MessageEvent<string>).data) as RenderEvent;
      if (e.clipId !== clip.id || e.version !== target) return;
      if (e.state === "rendering") setPercent(e.percent);
      else {
        es.close();
        reload();
      }
    });
    const poll = setInterval(reload, 4000);
    return () => {
      es.close();
      clearInterval(poll);
    };
  }, [target]);

  const list = words.data?.words ?? [];
  const shown = (w: Word) => fixes[w.index] ?? w.text;
  // The caption line at the playhead: the words around the one spoken.
  const at = list.findIndex((w) => time >= w.startSec && time < w.endSec);
  const line = at < 0 ? [] : list.slice(Math.max(0, at - 3), at + 4);
  const changed =
    title.trim() !== clip.title ||
    Math.abs(start - clip.startSec) > 1e-3 ||
    Math.abs(end - clip.endSec) > 1e-3 ||
    Object.keys(fixes).length > 0 ||
    layout !== "" ||
    aspect !== "" ||
    template !== "" ||
    Object.keys(picks).length > 0 ||
    clearFraming;

  // The picks as `reframe` spans on the clip's timeline after this edit
  // (a new start shifts it).
  function reframeSpans() {
    const shift = clip.startSec - start;
    const length = end - start;
    return Object.entries(picks)
      .map(([k, p]) => {
        const shot = faces.data!.shots[Number(k)];
        const fromSec = Math.min(length, Math.max(0, shot.fromSec + shift));
        const toSec = Math.min(length, Math.max(0, shot.toSec + shift));
        return { fromSec: Math.round(fromSec * 1000) / 1000, toSec: Math.round(toSec * 1000) / 1000, ...p };
      })
      .filter((s) => s.toSec - s.fromSec >= 0.1);
  }

  async function submit(e: Event) {
    e.preventDefault();
    await save.run(async () => {
      const body: Record<string, unknown> = {};
      if (title.trim() !== clip.title) body.title = title.trim();
      if (Math.abs(start - clip.startSec) > 1e-3) body.startSec = start;
      if (Math.abs(end - clip.endSec) > 1e-3) body.endSec = end;
      const fixed = Object.entries(fixes).map(([i, text]) => ({ index: Number(i), text }));
      if (fixed.length) body.words = fixed;
      if (layout) body.layout = layout;
      if (aspect) body.aspectRatio = aspect;
      if (template) body.captionTemplate = template;
      if (Object.keys(picks).length > 0) body.reframe = reframeSpans();
      else if (clearFraming) body.reframe = [];
      const edited = (await ok(
        api.PATCH("/projects/{id}/clips/{clip_id}", { params: { path }, body: body as never }),
      )) as Clip;
      if (edited.status === "rendering") {
        setPercent(0);
        setTarget(edited.version);
      } else reload();
    });
  }
  async function restore(v: number) {
    await save.run(async () => {
      await ok(api.POST("/projects/{id}/clips/{clip_id}/versions/{version}/restore", { params: { path: { ...path, version: v } } }));
      reload();
    });
  }
  const nudge = (set: (f: (v: number) => number) => void, d: number) => set((v) => Math.max(0, Math.round((v + d) * 10) / 10));
  const w = picked === null ? null : list[picked];

  return (
    <Page title={t("editClipTitle", { title: clip.title })}>
      <p class="meta">
        <a href={`/projects/${clip.projectId}`}>{t("back")}</a> · {t("versionN", { n: clip.version })} · {clip.duration}
      </p>
      {clip.status === "failed" && clip.renderError && <p class="error">{t("renderFailed", { m: clip.renderError })}</p>}
      {rendering !== null && (
        <div aria-live="polite">
          <Progress label={t("rendering")} value={rendering} />
        </div>
      )}
      <div class="editor">
        <div class="editor-player">
          <video
            ref={video}
            controls
            playsInline
            src={clip.url}
            poster={clip.thumbnail}
            aria-label={clip.title}
            onTimeUpdate={(e) => setTime(e.currentTarget.currentTime)}
          />
          <p class="caption-overlay" aria-hidden="true" data-testid="caption-overlay">
            {line.map((x) => (
              <span key={x.index} class={x.index === list[at]?.index ? "now" : ""}>
                {shown(x)}{" "}
              </span>
            ))}
          </p>
        </div>
        <form class="stack editor-form" onSubmit={submit} aria-label={t("editClip")}>
          <label>
            {t("clipTitle")}
            <input type="text" required maxLength={100} value={title} onInput={(e) => setTitle(e.currentTarget.value)} />
          </label>
          <fieldset>
            <legend>{t("clipRange")}</legend>
            {wave.error ? <ErrorBox error={wave.error} /> : wave.data && (
              <Timeline
                wave={wave.data}
                start={start}
                end={end}
                playhead={clip.startSec + time}
                onRange={(s, e) => {
                  setStart(s);
                  setEnd(e);
                }}
                onSeek={(sec) => {
                  if (video.current && sec >= clip.startSec && sec <= clip.endSec) video.current.currentTime = sec - clip.startSec;
                }}
              />
            )}
            {(
              [
                ["startSec", start, setStart],
                ["endSec", end, setEnd],
              ] as const
            ).map(([k, v, set]) => (
              <div class="row" key={k}>
                <label>
                  {t(k === "startSec" ? "clipStart" : "clipEnd")}
                  <input type="number" step="any" min="0" value={v.toFixed(2)} onChange={(e) => set(Number(e.currentTarget.value))} />
                </label>
                <button type="button" class="secondary small" onClick={() => nudge(set, -0.1)} aria-label={t(k === "startSec" ? "startEarlier" : "endEarlier")}>
                  −0.1 s
                </button>
                <button type="button" class="secondary small" onClick={() => nudge(set, 0.1)} aria-label={t(k === "startSec" ? "startLater" : "endLater")}>
                  +0.1 s
                </button>
              </div>
            ))}
          </fieldset>
          <fieldset>
            <legend>{t("clipWords")}</legend>
            <p class="small muted">{t("clipWordsHint")}</p>
            {words.error ? <ErrorBox error={words.error} /> : (
              <div class="words" role="group" aria-label={t("clipWords")}>
                {list.map((x, i) => (
                  <button
                    type="button"
                    key={x.index}
                    class={`word${fixes[x.index] !== undefined ? " fixed" : ""}${shown(x) === "" ? " dropped" : ""}`}
                    aria-pressed={picked === i}
                    onClick={() => {
                      setPicked(picked === i ? null : i);
                      if (video.current) video.current.currentTime = x.startSec;
                    }}
                  >
                    {shown(x) || "∅"}
                  </button>
                ))}
              </div>
            )}
            {w && (
              <div class="stack inset">
                <label>
                  {t("wordText", { t: clock(w.startSec) })}
                  <input
                    type="text"
                    maxLength={100}
                    value={shown(w)}
                    onInput={(e) => setFixes({ ...fixes, [w.index]: e.currentTarget.value })}
                  />
                </label>
                <div class="row">
                  <button type="button" class="secondary small" onClick={() => setStart(Math.round((clip.startSec + w.startSec) * 100) / 100)}>
                    {t("startHere")}
                  </button>
                  <button type="button" class="secondary small" onClick={() => setEnd(Math.round((clip.startSec + w.endSec) * 100) / 100)}>
                    {t("endHere")}
                  </button>
                </div>
              </div>
            )}
          </fieldset>
          <fieldset>
            <legend>{t("reframe")}</legend>
            <p class="small muted">{t("reframeHint")}</p>
            {faces.error ? <ErrorBox error={faces.error} /> : faces.data && (
              <>
                <FacePicker faces={faces.data} picks={picks} onPick={setPicks} />
                {faces.data.reframe.length > 0 && (
                  <label class="inline">
                    <input type="checkbox" checked={clearFraming} onChange={(e) => setClearFraming(e.currentTarget.checked)} /> {t("clearReframe")}
                  </label>
                )}
              </>
            )}
          </fieldset>
          <label>
            {t("layout")}
            <select value={layout} onChange={(e) => setLayout(e.currentTarget.value)}>
              <option value="">{t("keepAsIs", { v: t(("layout_" + clip.layout) as Key) })}</option>
              {LAYOUTS.map((l) => (
                <option key={l} value={l}>{t(("layout_" + l) as Key)}</option>
              ))}
            </select>
          </label>
          <label>
            {t("aspectRatio")}
            <select value={aspect} onChange={(e) => setAspect(e.currentTarget.value)}>
              <option value="">{t("keepAsIs", { v: clip.quality })}</option>
              {ASPECTS.map((a) => (
                <option key={a} value={a}>{a}</option>
              ))}
            </select>
          </label>
          <label>
            {t("captionTemplate")}
            <select value={template} onChange={(e) => setTemplate(e.currentTarget.value)}>
              <option value="">{t("keepTemplate")}</option>
              {(templates.data?.templates ?? []).map((x) => (
                <option key={x.id} value={x.id}>{x.name}</option>
              ))}
              {PRESETS.map((p) => (
                <option key={p} value={p}>{p}</option>
              ))}
            </select>
          </label>
          <ErrorBox error={save.error} />
          <button type="submit" disabled={!changed || rendering !== null}>
            {t("saveVersion")}
          </button>
        </form>
      </div>
      <section class="panel" aria-labelledby="versions-h">
        <h2 id="versions-h">{t("versions")}</h2>
        <ol class="versions">
          {(versions.data?.versions ?? []).map((v) => (
            <li key={v.version}>
              {t("versionN", { n: v.version })} · {v.title} · {clock(v.startSec)}–{clock(v.endSec)} · {t(("layout_" + v.layout) as Key)}{" "}
              {v.current ? (
                <strong>{t("currentVersion")}</strong>
              ) : (
                <button type="button" class="secondary small" disabled={rendering !== null} onClick={() => restore(v.version)}>
                  {t("restoreVersion", { n: v.version })}
                </button>
              )}
            </li>
          ))}
        </ol>
      </section>
    </Page>
  );
}
