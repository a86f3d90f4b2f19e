import { useRef, useState } from "preact/hooks";
import { api, ok } from "../api/client";
import type { CreateProjectBody, Created, MetaResponse, Preset, TemplateList, UploadResponse } from "../api/models";
import { uploadVideo } from "../api/upload";
import { Choice, clock, ErrorBox, FieldError, Page, Progress, useLoad } from "../components/ui";
import { t, tn } from "../i18n";
import { navigate } from "../router";
import { DEFAULT_OPTIONS, optionsBody, ProjectOptions, type Options } from "./ProjectOptions";

export const PRESETS = ["default", "shorts", "karaoke", "minimal", "bold"];

export function NewProject() {
  const [mode, setMode] = useState<"file" | "url">("file");
  const [url, setUrl] = useState("");
  const [meta, setMeta] = useState<MetaResponse | null>(null);
  const [upload, setUpload] = useState<UploadResponse | null>(null);
  const [uploadPct, setUploadPct] = useState<number | null>(null);
  const [title, setTitle] = useState("");
  const [preset, setPreset] = useState<Preset>("auto");
  const [template, setTemplate] = useState("default");
  const [skipCuts, setSkipCuts] = useState(false);
  const [options, setOptions] = useState<Options>(DEFAULT_OPTIONS);
  const [error, setError] = useState<unknown>(null);
  // The failure of the source itself (a link's preview, an upload), shown
  // by the source's field.
  const [previewError, setPreviewError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const abort = useRef<(() => void) | null>(null);
  const templates = useLoad(() => ok(api.GET("/caption-templates")) as Promise<TemplateList>, []);
  // The credit cost of the chosen video: one per started stretch of
  // `secondsPerCredit` (the rule the server charges by).
  const plans = useLoad(() => ok(api.GET("/plans")), []);
  const per = plans.data?.secondsPerCredit;
  const cost = (secs: number) =>
    per ? (
      <p class="muted" data-testid="project-cost">
        {tn("projectCost", Math.max(1, Math.ceil(secs / per)))}
      </p>
    ) : null;

  async function preview() {
    setError(null);
    setPreviewError(null);
    setMeta(null);
    setBusy(true);
    try {
      setMeta(await ok(api.POST("/meta", { body: { url } })));
    } catch (e) {
      setPreviewError(e);
    } finally {
      setBusy(false);
    }
  }

  async function chooseFile(input: HTMLInputElement) {
    const file = input.files?.[0];
    abort.current?.();
    setUpload(null);
    setError(null);
    setPreviewError(null);
    if (!file) return;
    setUploadPct(0);
    const up = uploadVideo(file, (f) => setUploadPct(Math.round(f * 100)));
    abort.current = up.abort;
    try {
      const r = await up.done;
      setUpload(r);
      if (!title) setTitle(file.name.replace(/\.[^.]+$/, ""));
    } catch (e) {
      setPreviewError(e);
      input.value = "";
    } finally {
      setUploadPct(null);
      abort.current = null;
    }
  }

  async function create(e: Event) {
    e.preventDefault();
    setError(null);
    const body: CreateProjectBody = {
      title: title.trim() || undefined,
      clipDurationPreset: preset,
      captionTemplate: template,
      skipCuts,
      ...optionsBody(options),
    };
    if (mode === "file") {
      if (!upload) return;
      body.fileKey = upload.fileKey;
    } else {
      body.sourceUrl = url.trim();
      if (meta?.thumbnail) body.thumbnail = meta.thumbnail;
    }
    setBusy(true);
    try {
      const created = (await ok(api.POST("/projects", { body }))) as Created;
      navigate(`/projects/${created.projectId}`);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }

  const ready = mode === "file" ? !!upload : url.trim().length > 0;
  return (
    <Page title={t("newProject")}>
      <form class="stack narrow" onSubmit={create}>
        <Choice
          legend={t("source")}
          name="mode"
          value={mode}
          onChange={(m) => {
            setMode(m);
            setPreviewError(null);
            setError(null);
          }}
          options={[
            ["file", t("fromFile")],
            ["url", t("fromUrl")],
          ]}
        />

        {mode === "file" ? (
          <div class="stack">
            <label>
              {t("videoFile")}
              <input
                type="file"
                accept="video/mp4,video/quicktime,video/x-msvideo,video/x-matroska,video/webm,.mp4,.mov,.avi,.mkv,.webm"
                onChange={(e) => chooseFile(e.currentTarget)}
                aria-describedby="file-hint"
              />
            </label>
            <p id="file-hint" class="muted small">
              {t("fileHint")}
            </p>
            <ErrorBox error={previewError} />
            {uploadPct !== null && <Progress label={t("uploading", { p: uploadPct })} value={uploadPct} />}
            {upload && (
              <p role="status" class="ok">
                {t("uploaded", { d: clock(upload.durationSec) })}
              </p>
            )}
            {upload && cost(upload.durationSec)}
          </div>
        ) : (
          <div class="stack">
            <label>
              {t("videoUrl")}
              <input
                type="url"
                name="sourceUrl"
                value={url}
                onInput={(e) => {
                  setUrl(e.currentTarget.value);
                  setPreviewError(null);
                }}
                placeholder="https://www.youtube.com/watch?v=…"
              />
            </label>
            <FieldError error={previewError || error} field="sourceUrl" also={["url"]} />
            <button type="button" class="secondary" disabled={!url.trim() || busy} onClick={preview}>
              {t("preview")}
            </button>
            <ErrorBox error={previewError} fields={["sourceUrl", "url"]} />
            {meta && (
              <div class="meta-preview" role="status">
                {meta.thumbnail && <img src={meta.thumbnail} alt="" />}
                <div>
                  <strong>{meta.title}</strong>
                  <p class="muted">
                    {t("duration")}: {clock(meta.durationSec)} · {t("languageCode")}:{" "}
                    {meta.language && meta.language !== "und" ? meta.language : t("languageUnknown")}
                  </p>
                  {cost(meta.durationSec)}
                </div>
              </div>
            )}
          </div>
        )}

        <label>
          <span>
            {t("title")} <span class="muted">({t("optional")})</span>
          </span>
          <input value={title} onInput={(e) => setTitle(e.currentTarget.value)} maxLength={200} />
        </label>
        <label>
          {t("clipLength")}
          <select value={preset} onChange={(e) => setPreset(e.currentTarget.value as Preset)}>
            <option value="auto">{t("auto")}</option>
            <option value="15-30">15–30 s</option>
            <option value="30-60">30–60 s</option>
            <option value="60-90">60–90 s</option>
          </select>
        </label>
        <label>
          {t("captionTemplate")}
          <select value={template} onChange={(e) => setTemplate(e.currentTarget.value)}>
            {PRESETS.map((p) => (
              <option key={p} value={p}>
                {p}
              </option>
            ))}
            {templates.data?.templates.map((tp) => (
              <option key={tp.id} value={tp.id}>
                {tp.name}
              </option>
            ))}
          </select>
        </label>
        <label class="inline">
          <input type="checkbox" checked={skipCuts} onChange={(e) => setSkipCuts(e.currentTarget.checked)} />
          {t("skipCuts")}
        </label>
        <ProjectOptions value={options} onChange={setOptions} />
        <ErrorBox error={error} fields={mode === "url" ? ["sourceUrl", "url"] : []} />
        <button type="submit" disabled={!ready || busy || uploadPct !== null}>
          {t("createProject")}
        </button>
      </form>
    </Page>
  );
}
