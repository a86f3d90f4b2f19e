import { useEffect, useState } from "preact/hooks";
import { api, ok } from "../api/client";
import type { BulkScheduled, Clip, Integration, IntegrationList, Provider } from "../api/models";
import { ErrorBox } from "../components/ui";
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

function ProviderSelect({ integrations, value, onChange }: { integrations: Integration[]; value: string; onChange: (v: string) => void }) {
  return (
    <label>
      {t("provider")}
      <select value={value} onChange={(e) => onChange(e.currentTarget.value)} required>
        {integrations.map((i) => (
          <option key={i.provider} value={i.provider}>
            {PROVIDER_NAMES[i.provider] ?? i.provider}
          </option>
        ))}
      </select>
    </label>
  );
}

export function ScheduleOne({ clip, integrations, onDone }: { clip: Clip; integrations: Integration[] | undefined; onDone: () => void }) {
  const [provider, setProvider] = useState("");
  const [title, setTitle] = useState(clip.title);
  const [when, setWhen] = useState(inOneHour());
  const [error, setError] = useState<unknown>(null);
  const [done, setDone] = useState(false);
  const active = (integrations ?? []).filter((i) => i.active);
  useEffect(() => {
    if (!provider && active.length) setProvider(active[0].provider);
  }, [integrations]);
  if (integrations && active.length === 0) {
    return (
      <p class="notice">
        <a href="/integrations">{t("needIntegration")}</a>
      </p>
    );
  }
  async function submit(e: Event) {
    e.preventDefault();
    setError(null);
    try {
      await ok(
        api.POST("/clips/{clip_id}/schedule", {
          params: { path: { clip_id: clip.id } },
          body: { provider: provider as Provider, title, scheduledAt: toUtc(when) },
        }),
      );
      setDone(true);
      setTimeout(onDone, 1500);
    } catch (err) {
      setError(err);
    }
  }
  return (
    <form class="stack inset" onSubmit={submit} aria-label={`${t("scheduleClip")}: ${clip.title}`}>
      <ProviderSelect integrations={active} value={provider} onChange={setProvider} />
      <label>
        {t("postTitle")}
        <input value={title} onInput={(e) => setTitle(e.currentTarget.value)} required />
      </label>
      <label>
        {t("when")}
        <input type="datetime-local" value={when} onInput={(e) => setWhen(e.currentTarget.value)} required />
      </label>
      <ErrorBox error={error} />
      {done && (
        <p role="status" class="ok">
          {t("scheduled")} · <a href="/schedule">{t("schedule")}</a>
        </p>
      )}
      <div class="row">
        <button type="submit">{t("save")}</button>
        <button type="button" class="secondary" onClick={onDone}>
          {t("close")}
        </button>
      </div>
    </form>
  );
}

export function BulkSchedule({ projectId, integrations, onDone }: { projectId: string; integrations: Integration[] | undefined; onDone: () => void }) {
  const active = (integrations ?? []).filter((i) => i.active);
  const [providers, setProviders] = useState<string[]>([]);
  const [when, setWhen] = useState(inOneHour());
  const [interval, setInterval_] = useState(24);
  const [caption, setCaption] = useState("");
  const [error, setError] = useState<unknown>(null);
  const [count, setCount] = useState<number | null>(null);
  if (integrations && active.length === 0) {
    return (
      <p class="notice">
        <a href="/integrations">{t("needIntegration")}</a>
      </p>
    );
  }
  async function submit(e: Event) {
    e.preventDefault();
    setError(null);
    try {
      const r = (await ok(
        api.POST("/projects/{id}/bulk-schedule", {
          params: { path: { id: projectId } },
          body: { scheduledAt: toUtc(when), intervalHours: interval, providers: providers as Provider[], caption: caption || undefined },
        }),
      )) as BulkScheduled;
      setCount(r.count);
    } catch (err) {
      setError(err);
    }
  }
  return (
    <form class="panel stack" onSubmit={submit} aria-label={t("scheduleAll")}>
      <h2>{t("scheduleAll")}</h2>
      <fieldset class="choice">
        <legend>{t("provider")}</legend>
        {active.map((i) => (
          <label class="inline" key={i.provider}>
            <input
              type="checkbox"
              checked={providers.includes(i.provider)}
              onChange={(e) =>
                setProviders(e.currentTarget.checked ? [...providers, i.provider] : providers.filter((p) => p !== i.provider))
              }
            />
            {PROVIDER_NAMES[i.provider] ?? i.provider}
          </label>
        ))}
      </fieldset>
      <label>
        {t("when")}
        <input type="datetime-local" value={when} onInput={(e) => setWhen(e.currentTarget.value)} required />
      </label>
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
      <ErrorBox error={error} />
      {count !== null && (
        <p role="status" class="ok">
          {t("scheduled")}: {count} · <a href="/schedule">{t("schedule")}</a>
        </p>
      )}
      <div class="row">
        <button type="submit" disabled={providers.length === 0}>
          {t("save")}
        </button>
        <button type="button" class="secondary" onClick={onDone}>
          {t("close")}
        </button>
      </div>
    </form>
  );
}
