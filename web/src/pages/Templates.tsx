import { Fragment } from "preact";
import { useState } from "preact/hooks";
import { api, ok } from "../api/client";
import type { Animation, Template, TemplateList, WatermarkPosition } from "../api/models";
import { ErrorBox, FieldError, Loading, Page, useLoad } from "../components/ui";
import { t } from "../i18n";

type Style = Omit<Template, "id" | "createdAt" | "updatedAt">;

const ANIMATIONS = ["none", "fade", "pop", "bounce", "karaoke", "typewriter"];
const POSITIONS = ["top", "middle", "bottom"].flatMap((v) => ["left", "center", "right"].map((h) => `${v}-${h}`));
const FONTS = ["Open Sans", "DejaVu Sans", "Liberation Sans", "Noto Sans", "Arial"];

/** The default template's style (the server fills omitted fields the same way). */
const DEFAULT_STYLE: Style = {
  name: "",
  description: "",
  isDefault: false,
  fontFamily: "Open Sans",
  fontSize: 72,
  fontColor: "#FFFFFF",
  highlightColor: "#FFD700",
  strokeColor: "#000000",
  strokeWidth: 4,
  background: false,
  backgroundColor: null,
  animation: "pop",
  positionY: 72,
  fontStack: "'Open Sans', 'DejaVu Sans', Arial, sans-serif",
  watermarkEnabled: false,
  watermarkOpacity: 0.6,
  watermarkPosition: "bottom-right",
  watermarkSize: 18,
  emphasizeKeywords: true,
};

/** The server's keyword rule (captions/emphasis.rs), roughly: numbers, names
 * (capitalised, not first) and long words are drawn in the highlight colour. */
function salient(word: string, i: number): boolean {
  const letters = word.replace(/[^\p{L}]/gu, "");
  return /\p{N}/u.test(word) || (i > 0 && /^\p{Lu}/u.test(letters) && letters.length > 1) || letters.length >= 8;
}

/** `#RRGGBB` for a colour input (drops an alpha byte). */
function rgb(c: string | null | undefined, fallback: string): string {
  return c && /^#[0-9a-fA-F]{6}/.test(c) ? c.slice(0, 7) : fallback;
}

/** A 9:16 frame showing the caption style, scaled from 1080 px wide. */
export function CaptionPreview({ s }: { s: Style }) {
  const scale = 216 / 1080;
  const words = t("previewText").split(" ");
  const [v, h] = s.watermarkPosition.split("-");
  return (
    <figure class="preview-frame" aria-label={t("livePreview")}>
      <div
        class={`preview-caption anim-${s.animation}`}
        style={{
          top: `${s.positionY}%`,
          fontFamily: `'${s.fontFamily}', ${s.fontStack}`,
          fontSize: `${Math.max(6, s.fontSize * scale)}px`,
          color: s.fontColor,
          WebkitTextStroke: s.strokeWidth > 0 ? `${Math.max(0.5, s.strokeWidth * scale)}px ${s.strokeColor}` : undefined,
          background: s.background ? s.backgroundColor ?? "#000000AA" : "transparent",
        }}
      >
        {words.map((w, i) => {
          const emphasis = i !== 2 && s.emphasizeKeywords && salient(w, i);
          return (
            <Fragment key={i}>
              {i > 0 && " "}
              <span
                class={i === 2 ? "current" : emphasis ? "emphasis" : undefined}
                style={i === 2 || emphasis ? { color: s.highlightColor } : undefined}
              >
                {w}
              </span>
            </Fragment>
          );
        })}
      </div>
      {s.watermarkEnabled && (
        <div
          class="preview-watermark"
          style={{
            opacity: s.watermarkOpacity,
            width: `${s.watermarkSize}%`,
            [v === "top" ? "top" : v === "bottom" ? "bottom" : "top"]: v === "middle" ? "45%" : "4%",
            [h === "left" ? "left" : h === "right" ? "right" : "left"]: h === "center" ? `${50 - s.watermarkSize / 2}%` : "4%",
          }}
        >
          Clipforge
        </div>
      )}
      <figcaption class="sr-only">{t("livePreview")}</figcaption>
    </figure>
  );
}

function Editor({ initial, id, onSaved, onClose }: { initial: Style; id: string | null; onSaved: () => void; onClose: () => void }) {
  const [s, setS] = useState<Style>(initial);
  const [error, setError] = useState<unknown>(null);
  const set = <K extends keyof Style>(k: K, v: Style[K]) => setS({ ...s, [k]: v });
  const num = (k: "fontSize" | "strokeWidth" | "positionY" | "watermarkOpacity" | "watermarkSize") => (e: Event) =>
    set(k, Number((e.currentTarget as HTMLInputElement).value));
  async function save(e: Event) {
    e.preventDefault();
    setError(null);
    try {
      if (id) await ok(api.PUT("/caption-templates/{id}", { params: { path: { id } }, body: s }));
      else await ok(api.POST("/caption-templates", { body: s }));
      onSaved();
    } catch (err) {
      setError(err);
    }
  }
  return (
    <form class="panel editor" onSubmit={save} aria-label={id ? t("editTemplate") : t("newTemplate")}>
      <h2>{id ? t("editTemplate") : t("newTemplate")}</h2>
      <div class="editor-grid">
        <div class="stack">
          <label>
            {t("name")}
            <input name="name" value={s.name} required maxLength={100} onInput={(e) => set("name", e.currentTarget.value)} />
          </label>
          <FieldError error={error} field="name" />
          <label>
            {t("description")}
            <input value={s.description} onInput={(e) => set("description", e.currentTarget.value)} />
          </label>
          <label class="inline">
            <input type="checkbox" checked={s.isDefault} onChange={(e) => set("isDefault", e.currentTarget.checked)} />
            {t("isDefault")}
          </label>
          <label>
            {t("fontFamily")}
            <select value={s.fontFamily} onChange={(e) => set("fontFamily", e.currentTarget.value)}>
              {[...new Set([s.fontFamily, ...FONTS])].map((f) => (
                <option key={f}>{f}</option>
              ))}
            </select>
          </label>
          <label>
            {t("fontSize")} ({s.fontSize})
            <input type="range" min={12} max={200} value={s.fontSize} onInput={num("fontSize")} />
          </label>
          <div class="colors">
            <label>
              {t("fontColor")}
              <input type="color" value={rgb(s.fontColor, "#ffffff")} onInput={(e) => set("fontColor", e.currentTarget.value.toUpperCase())} />
            </label>
            <label>
              {t("highlightColor")}
              <input type="color" value={rgb(s.highlightColor, "#ffd700")} onInput={(e) => set("highlightColor", e.currentTarget.value.toUpperCase())} />
            </label>
            <label>
              {t("strokeColor")}
              <input type="color" value={rgb(s.strokeColor, "#000000")} onInput={(e) => set("strokeColor", e.currentTarget.value.toUpperCase())} />
            </label>
          </div>
          <label>
            {t("strokeWidth")} ({s.strokeWidth})
            <input type="range" min={0} max={20} value={s.strokeWidth} onInput={num("strokeWidth")} />
          </label>
          <label class="inline">
            <input type="checkbox" checked={s.background} onChange={(e) => set("background", e.currentTarget.checked)} />
            {t("background")}
          </label>
          {s.background && (
            <label>
              {t("backgroundColor")}
              <input
                type="color"
                value={rgb(s.backgroundColor, "#000000")}
                onInput={(e) => set("backgroundColor", e.currentTarget.value.toUpperCase() + "AA")}
              />
            </label>
          )}
          <label>
            {t("animation")}
            <select value={s.animation} onChange={(e) => set("animation", e.currentTarget.value as Animation)}>
              {ANIMATIONS.map((a) => (
                <option key={a}>{a}</option>
              ))}
            </select>
          </label>
          <label class="inline">
            <input type="checkbox" checked={s.emphasizeKeywords} onChange={(e) => set("emphasizeKeywords", e.currentTarget.checked)} />
            {t("emphasizeKeywords")}
          </label>
          <label>
            {t("positionY")} ({s.positionY})
            <input type="range" min={0} max={100} value={s.positionY} onInput={num("positionY")} />
          </label>
          <label class="inline">
            <input type="checkbox" checked={s.watermarkEnabled} onChange={(e) => set("watermarkEnabled", e.currentTarget.checked)} />
            {t("watermark")}
          </label>
          {s.watermarkEnabled && (
            <>
              <label>
                {t("watermarkOpacity")} ({s.watermarkOpacity})
                <input type="range" min={0} max={1} step={0.05} value={s.watermarkOpacity} onInput={num("watermarkOpacity")} />
              </label>
              <label>
                {t("watermarkPosition")}
                <select value={s.watermarkPosition} onChange={(e) => set("watermarkPosition", e.currentTarget.value as WatermarkPosition)}>
                  {POSITIONS.map((p) => (
                    <option key={p}>{p}</option>
                  ))}
                </select>
              </label>
              <label>
                {t("watermarkSize")} ({s.watermarkSize})
                <input type="range" min={1} max={100} value={s.watermarkSize} onInput={num("watermarkSize")} />
              </label>
            </>
          )}
        </div>
        <div class="editor-preview" data-testid="editor-preview">
          <h3>{t("livePreview")}</h3>
          <CaptionPreview s={s} />
        </div>
      </div>
      <ErrorBox error={error} fields={["name"]} />
      <div class="row">
        <button type="submit">{t("save")}</button>
        <button type="button" class="secondary" onClick={onClose}>
          {t("close")}
        </button>
      </div>
    </form>
  );
}

export function Templates() {
  const { data, error, reload } = useLoad(() => ok(api.GET("/caption-templates")) as Promise<TemplateList>, []);
  const [editing, setEditing] = useState<{ id: string | null; style: Style } | null>(null);
  const [actionError, setActionError] = useState<unknown>(null);
  async function remove(id: string, name: string) {
    if (!confirm(t("confirmDeleteTemplate", { name }))) return;
    setActionError(null);
    try {
      await ok(api.DELETE("/caption-templates/{id}", { params: { path: { id } } }));
      reload();
    } catch (e) {
      setActionError(e);
    }
  }
  return (
    <Page
      title={t("templates")}
      actions={
        <button type="button" onClick={() => setEditing({ id: null, style: { ...DEFAULT_STYLE } })}>
          {t("newTemplate")}
        </button>
      }
    >
      {editing && (
        <Editor
          key={editing.id ?? "new"}
          id={editing.id}
          initial={editing.style}
          onClose={() => setEditing(null)}
          onSaved={() => {
            setEditing(null);
            reload();
          }}
        />
      )}
      <ErrorBox error={error || actionError} />
      {!data && !error && <Loading />}
      {data && (
        <ul class="cards templates" aria-label={t("templates")}>
          {data.templates.map((tp) => {
            const { id, createdAt: _c, updatedAt: _u, ...style } = tp;
            return (
              <li key={id} class="card template-card">
                <CaptionPreview s={style} />
                <div class="card-body">
                  <h2>
                    {tp.name} {tp.isDefault && <span class="badge-soft">{t("default")}</span>}
                  </h2>
                  {tp.description && <p class="muted">{tp.description}</p>}
                  <p class="muted small">
                    {tp.fontFamily} · {tp.fontSize}px · {tp.animation}
                  </p>
                  <div class="row">
                    <button type="button" class="secondary small" onClick={() => setEditing({ id, style })} aria-label={`${t("edit")}: ${tp.name}`}>
                      {t("edit")}
                    </button>
                    {!tp.isDefault && (
                      <button type="button" class="danger small" onClick={() => remove(id, tp.name)} aria-label={`${t("delete")}: ${tp.name}`}>
                        {t("delete")}
                      </button>
                    )}
                  </div>
                </div>
              </li>
            );
          })}
        </ul>
      )}
    </Page>
  );
}
