import type { CreateProjectBody } from "../api/models";
import { t, type Key } from "../i18n";

type Layout = NonNullable<CreateProjectBody["layout"]>;
type Aspect = NonNullable<CreateProjectBody["aspectRatio"]>;
export const LAYOUTS: Layout[] = ["auto", "single", "split", "speaker", "screen", "fit"];
export const ASPECTS: Aspect[] = ["9:16", "1:1", "4:5", "16:9"];

/** What a new project's clips should be about and how they look. */
export interface Options {
  prompt: string;
  layout: Layout;
  aspectRatio: Aspect;
  removeFillers: boolean;
}

export const DEFAULT_OPTIONS: Options = { prompt: "", layout: "auto", aspectRatio: "9:16", removeFillers: false };

/** The options as fields of the create-project body (defaults left out). */
export function optionsBody(o: Options): Partial<CreateProjectBody> {
  return {
    prompt: o.prompt.trim() || undefined,
    layout: o.layout,
    aspectRatio: o.aspectRatio,
    removeFillers: o.removeFillers || undefined,
  };
}

/** The new-project form's steering, framing and caption options. */
export function ProjectOptions({ value, onChange }: { value: Options; onChange: (o: Options) => void }) {
  const set = <K extends keyof Options>(k: K, v: Options[K]) => onChange({ ...value, [k]: v });
  return (
    <fieldset class="stack">
      <legend>{t("clipOptions")}</legend>
      <label>
        <span>
          {t("prompt")} <span class="muted">({t("optional")})</span>
        </span>
        <textarea
          value={value.prompt}
          maxLength={500}
          rows={2}
          placeholder={t("promptHint")}
          onInput={(e) => set("prompt", e.currentTarget.value)}
        />
      </label>
      <label>
        {t("layout")}
        <select value={value.layout} onChange={(e) => set("layout", e.currentTarget.value as Layout)}>
          {LAYOUTS.map((l) => (
            <option key={l} value={l}>
              {t(("layout_" + l) as Key)}
            </option>
          ))}
        </select>
      </label>
      <label>
        {t("aspectRatio")}
        <select value={value.aspectRatio} onChange={(e) => set("aspectRatio", e.currentTarget.value as Aspect)}>
          {ASPECTS.map((a) => (
            <option key={a} value={a}>
              {a} · {t(("aspect_" + a.replace(":", "x")) as Key)}
            </option>
          ))}
        </select>
      </label>
      <label class="inline">
        <input type="checkbox" checked={value.removeFillers} onChange={(e) => set("removeFillers", e.currentTarget.checked)} />
        {t("removeFillers")}
      </label>
    </fieldset>
  );
}
