import { useEffect, useState } from "preact/hooks";
import { api, ok } from "../api/client";
import type { BulkScheduled, Clip, Integration, IntegrationList, Provider } from "../api/models";
import { ErrorBox, FieldError, useAction } from "../components/ui";
import { t } from "../i18n";

export const PROVIDERS = ["tiktok", "instagram", "youtube"] as const;
export const PROVIDER_NAMES: Record<string, string> = { tiktok: "TikTok", instagram: "Instagram", youtube: "YouTube" };

/** The user's connected platforms (undefined while loading). */
export function useIntegrations(): Integration[] | undefined {
  const [list, setList] = useState<Integration[] | undefined>(undefined);
  useEffect(() => {
    ok(api.GET("/integrations")).then(
      (d) => setList((d as IntegrationList).integrations),
      () => setList([]),
    );
  }, []);
  return list;
}

/** `Date` → the value of a datetime-local input (local time). */
export function localInput(d: Date): string {
  const z = new Date(d.getTime() - d.getTimezoneOffset() * 60000);
  return z.toISOString().slice(0, 16);
}

/** A datetime-local value (local time) → ISO 8601 UTC. */
export function toUtc(value: string): string {
  return new Date(value).toISOString();
}

function inOneHour(): string {
  const d = new Date(Date.now() + 3600_000);
  d.setMinutes(0, 0, 0);
  return localInput(d);
}

/** A field of a scheduling form; `error`: the form's last failure (shown
 * here when it is this field's). */
type Field = { value: string; onChange: (v: string) => void; error?: unknown };

/** The fields the scheduling forms show their own errors by. */
export const FIELDS = ["title", "scheduledAt"];

/** The post's title, as every scheduling form asks for it. */
export function TitleField({ value, onChange, error }: Field) {
  return (
    <>
      <label>
        {t("postTitle")}
        <input name="title" value={value} onInput={(e) => onChange(e.currentTarget.value)} required />
      </label>
      <FieldError error={error} field="title" />
    </>
  );
}

/** When to publish (local time). */
export function WhenField({ value, onChange, error }: Field) {
  return (
    <>
      <label>
        {t("when")}
        <input type="datetime-local" name="scheduledAt" value={value} onInput={(e) => onChange(e.currentTarget.value)} required />
      </label>
      <FieldError error={error} field="scheduledAt" />
    </>
  );
}

/** Save and Close, the end of every scheduling form. */
export function FormButtons({ onClose, disabled }: { onClose: () => void; disabled?: boolean }) {
  return (
    <div class="row">
      <button type="submit" disabled={disabled}>
        {t("save")}
      </button>
      <button type="button" class="secondary" onClick={onClose}>
        {t("close")}
      </button>
    </div>
  );
}

function NeedIntegration() {
  return (
    <p class="notice">
      <a href="/integrations">{t("needIntegration")}</a>
    </p>
  );
}

function Scheduled({ count }: { count?: number }) {
  return (
    <p role="status" class="ok">
      {t("scheduled")}
      {count !== undefined && `: ${count}`} · <a href="/schedule">{t("schedule")}</a>
    </p>
  );
}

const activeOf = (integrations: Integration[] | undefined) => (integrations ?? []).filter((i) => i.active);

export function ScheduleOne({ clip, integrations, onDone }: { clip: Clip; integrations: Integration[] | undefined; onDone: () => void }) {
  const active = activeOf(integrations);
  const [provider, setProvider] = useState("");
  const [title, setTitle] = useState(clip.title);
  const [when, setWhen] = useState(inOneHour());
  const [done, setDone] = useState(false);
  const action = useAction();
  useEffect(() => {
    if (!provider && active.length) setProvider(active[0].provider);
  }, [integrations]);
  if (integrations && active.length === 0) return <NeedIntegration />;
  async function submit(e: Event) {
    e.preventDefault();
    const body = { provider: provider as Provider, title, scheduledAt: toUtc(when) };
    if (await action.run(() => ok(api.POST("/clips/{clip_id}/schedule", { params: { path: { clip_id: clip.id } }, body })))) {
      setDone(true);
      setTimeout(onDone, 1500);
    }
  }
  return (
    <form class="stack inset" onSubmit={submit} aria-label={`${t("scheduleClip")}: ${clip.title}`}>
      <label>
        {t("provider")}
        <select value={provider} onChange={(e) => setProvider(e.currentTarget.value)} required>
          {active.map((i) => (
            <option key={i.provider} value={i.provider}>
              {PROVIDER_NAMES[i.provider] ?? i.provider}
            </option>
          ))}
        </select>
      </label>
      <TitleField value={title} onChange={setTitle} error={action.error} />
      <WhenField value={when} onChange={setWhen} error={action.error} />
      <ErrorBox error={action.error} fields={FIELDS} />
      {done && <Scheduled />}
      <FormButtons onClose={onDone} />
    </form>
  );
}

export function BulkSchedule({ projectId, integrations, onDone }: { projectId: string; integrations: Integration[] | undefined; onDone: () => void }) {
  const active = activeOf(integrations);
  const [providers, setProviders] = useState<string[]>([]);
  const [when, setWhen] = useState(inOneHour());
  const [interval, setInterval_] = useState(24);
  const [caption, setCaption] = useState("");
  const [count, setCount] = useState<number | null>(null);
  const action = useAction();
  if (integrations && active.length === 0) return <NeedIntegration />;
  async function submit(e: Event) {
    e.preventDefault();
    const body = { scheduledAt: toUtc(when), intervalHours: interval, providers: providers as Provider[], caption: caption || undefined };
    await action.run(async () => {
      const r = (await ok(api.POST("/projects/{id}/bulk-schedule", { params: { path: { id: projectId } }, body }))) as BulkScheduled;
      setCount(r.count);
    });
  }
  const toggle = (p: string, on: boolean) => setProviders(on ? [...providers, p] : providers.filter((x) => x !== p));
  return (
    <form class="panel stack" onSubmit={submit} aria-label={t("scheduleAll")}>
      <h2>{t("scheduleAll")}</h2>
      <fieldset class="choice">
        <legend>{t("provider")}</legend>
        {active.map((i) => (
          <label class="inline" key={i.provider}>
            <input type="checkbox" checked={providers.includes(i.provider)} onChange={(e) => toggle(i.provider, e.currentTarget.checked)} />
            {PROVIDER_NAMES[i.provider] ?? i.provider}
          </label>
        ))}
      </fieldset>
      <WhenField value={when} onChange={setWhen} error={action.error} />
      <label>
        {t("interval")}
        <input type="number" min={0} max={2160} value={interval} onInput={(e) => setInterval_(Number(e.currentTarget.value))} />
      </label>
      <label>
        <span>
          {t("caption")} <span class="muted">({t("optional")})</span>
        </span>
        <input value={caption} onInput={(e) => setCaption(e.currentTarget.value)} />
      </label>
      <ErrorBox error={action.error} fields={FIELDS} />
      {count !== null && <Scheduled count={count} />}
      <FormButtons onClose={onDone} disabled={providers.length === 0} />
    </form>
  );
}
