import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import { t, type Key } from "../i18n";

/** Seconds as m:ss, or h:mm:ss from an hour on. */
export function clock(sec: number): string {
  const s = Math.round(sec);
  const mmss = (m: number) => `${m}:${String(s % 60).padStart(2, "0")}`;
  if (s < 3600) return mmss(Math.floor(s / 60));
  return `${Math.floor(s / 3600)}:${mmss(Math.floor(s / 60) % 60).padStart(5, "0")}`;
}

export { ErrorBox, FieldError } from "./errors";

/** One choice out of a few, as radio buttons in a labelled group. */
export function Choice<T extends string>(props: { legend: string; name: string; value: T; options: [T, string][]; onChange: (v: T) => void }) {
  return (
    <fieldset class="choice">
      <legend>{props.legend}</legend>
      {props.options.map(([v, label]) => (
        <label class="inline" key={v}>
          <input type="radio" name={props.name} checked={props.value === v} onChange={() => props.onChange(v)} />
          {label}
        </label>
      ))}
    </fieldset>
  );
}

/** A labelled bar; `note`: a line under it (e.g. the time left). */
export function Progress({ label, value, note }: { label: string; value: number; note?: string | null }) {
  const v = Math.max(0, Math.min(100, Math.round(value)));
  return (
    <div class="progress-row">
      <span class="progress-label">{label}</span>
      <progress max={100} value={v} aria-label={label} />
      <span class="progress-value">{v}%</span>
      {note && <span class="progress-note muted small">{note}</span>}
    </div>
  );
}

/** Runs user actions and keeps the last one's failure for an ErrorBox. */
export function useAction() {
  const [error, setError] = useState<unknown>(null);
  async function run(action: () => Promise<unknown>): Promise<boolean> {
    setError(null);
    try {
      await action();
      return true;
    } catch (e) {
      setError(e);
      return false;
    }
  }
  return { error, setError, run };
}

/** Loads data on mount and whenever `deps` change. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]) {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<unknown>(null);
  const [n, setN] = useState(0);
  useEffect(() => {
    let live = true;
    setError(null);
    load().then(
      (d) => live && setData(d),
      (e) => live && setError(e),
    );
    return () => {
      live = false;
    };
  }, [...deps, n]);
  return { data, error, reload: () => setN((x) => x + 1), setData };
}

export function Page({ title, children, actions }: { title: string; children: ComponentChildren; actions?: ComponentChildren }) {
  useEffect(() => {
    document.title = `${title} · Clipforge`;
  }, [title]);
  return (
    <section class="page">
      <div class="page-head">
        <h1>{title}</h1>
        {actions && <div class="actions">{actions}</div>}
      </div>
      {children}
    </section>
  );
}

export function Loading() {
  return (
    <p class="muted" role="status">
      {t("loading")}
    </p>
  );
}

export function tk(key: string): string {
  return t(key as Key);
}
