import { useEffect, useState } from "preact/hooks";
import { api, ok } from "../api/client";
import type { CreatedWebhook, DeliveryPage, Webhook, WebhookEventType, WebhookList } from "../api/models";
import { ErrorBox, FieldError, Loading, tk, useAction, useLoad } from "../components/ui";
import { formatDate, t } from "../i18n";

const EVENTS: WebhookEventType[] = ["project.completed", "project.failed", "clip.rendered", "post.published", "post.failed", "credits.low"];
const eventName = (e: string) => tk(`event_${e.replace(".", "_")}`);

/** Webhooks: add (the signing secret shown once), list, test, delivery log with redeliver, delete. */
export function Webhooks() {
  const { data, error, reload } = useLoad(() => ok(api.GET("/webhooks")) as Promise<WebhookList>, []);
  const action = useAction();
  const [url, setUrl] = useState("");
  const [events, setEvents] = useState<WebhookEventType[]>(["project.completed", "project.failed"]);
  const [made, setMade] = useState<CreatedWebhook | null>(null);
  const [open, setOpen] = useState<string | null>(null);

  async function create(e: Event) {
    e.preventDefault();
    const done = await action.run(async () => {
      setMade((await ok(api.POST("/webhooks", { body: { url: url.trim(), events } }))) as CreatedWebhook);
    });
    if (done) {
      setUrl("");
      reload();
    }
  }
  async function remove(h: Webhook) {
    if (!confirm(t("confirmDeleteWebhook", { url: h.url }))) return;
    if (await action.run(() => ok(api.DELETE("/webhooks/{id}", { params: { path: { id: h.id } } })))) reload();
  }
  async function test(h: Webhook) {
    if (await action.run(() => ok(api.POST("/webhooks/{id}/test", { params: { path: { id: h.id } } })))) setOpen(h.id);
  }
  const toggle = (ev: WebhookEventType) => setEvents(events.includes(ev) ? events.filter((x) => x !== ev) : [...events, ev]);

  return (
    <section aria-labelledby="webhooks-title">
      <h2 id="webhooks-title">{t("webhooks")}</h2>
      <p class="muted">{t("webhooksIntro")}</p>
      <ErrorBox error={error || action.error} fields={["url"]} />
      {made && (
        <div class="panel" role="status" aria-label={t("newWebhook")}>
          <p>
            <strong>{t("secretShownOnce")}</strong>
          </p>
          <label>
            {t("signingSecret")}
            <input type="text" readOnly value={made.secret} data-testid="webhook-secret" onFocus={(e) => e.currentTarget.select()} />
          </label>
          <div class="actions">
            <button type="button" onClick={() => navigator.clipboard?.writeText(made.secret).catch(() => undefined)}>
              {t("copy")}
            </button>
            <button type="button" class="secondary" onClick={() => setMade(null)}>
              {t("done")}
            </button>
          </div>
        </div>
      )}
      <form class="panel" onSubmit={create} aria-label={t("newWebhook")}>
        <h3>{t("newWebhook")}</h3>
        <label>
          {t("webhookUrl")}
          <input type="url" name="url" required maxLength={2048} placeholder="https://example.com/clipforge" value={url} onInput={(e) => setUrl(e.currentTarget.value)} />
        </label>
        <FieldError error={action.error} field="url" />
        <fieldset class="choice">
          <legend>{t("webhookEvents")}</legend>
          {EVENTS.map((ev) => (
            <label class="inline" key={ev}>
              <input type="checkbox" checked={events.includes(ev)} onChange={() => toggle(ev)} />
              {eventName(ev)}
            </label>
          ))}
        </fieldset>
        <button type="submit" disabled={!url.trim() || events.length === 0}>
          {t("addWebhook")}
        </button>
      </form>
      {!data && !error && <Loading />}
      {data && data.webhooks.length === 0 && <p class="muted">{t("noWebhooks")}</p>}
      {data?.webhooks.map((h) => (
        <div class="panel" key={h.id} aria-label={h.url} role="group">
          <p>
            <code>{h.url}</code>
          </p>
          <p class="muted">
            {h.events.map(eventName).join(", ")} ·{" "}
            {!h.enabled ? t("webhookDisabled") : h.failingSince ? t("webhookFailing", { since: formatDate(h.failingSince) }) : t("webhookHealthy")}
          </p>
          <div class="actions">
            <button type="button" onClick={() => test(h)}>
              {t("sendTest")}
            </button>
            <button type="button" class="secondary" aria-expanded={open === h.id} onClick={() => setOpen(open === h.id ? null : h.id)}>
              {t("deliveryLog")}
            </button>
            <button type="button" class="secondary" onClick={() => remove(h)} aria-label={`${t("delete")} ${h.url}`}>
              {t("delete")}
            </button>
          </div>
          {open === h.id && <Deliveries hook={h.id} />}
        </div>
      ))}
    </section>
  );
}

/** One webhook's delivery log, newest first, refreshed every 2 s while open. */
function Deliveries({ hook }: { hook: string }) {
  const [tick, setTick] = useState(0);
  const { data, error } = useLoad(
    () => ok(api.GET("/webhooks/{id}/deliveries", { params: { path: { id: hook }, query: { limit: 20 } } })) as Promise<DeliveryPage>,
    [hook, tick],
  );
  const action = useAction();
  useRefresh(() => setTick((n) => n + 1));
  async function redeliver(id: string) {
    if (await action.run(() => ok(api.POST("/webhooks/{id}/deliveries/{delivery_id}/redeliver", { params: { path: { id: hook, delivery_id: id } } }))))
      setTick((n) => n + 1);
  }
  if (!data) return error ? <ErrorBox error={error} /> : <Loading />;
  if (data.deliveries.length === 0) return <p class="muted">{t("noDeliveries")}</p>;
  return (
    <div class="table-wrap" tabIndex={0} role="region" aria-label={t("deliveryLog")}>
      <ErrorBox error={action.error} />
      <table>
        <thead>
          <tr>
            <th scope="col">{t("colDate")}</th>
            <th scope="col">{t("colType")}</th>
            <th scope="col">{t("deliveryStatus")}</th>
            <th scope="col">{t("deliveryAttempts")}</th>
            <th scope="col">
              <span class="sr-only">{t("redeliver")}</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {data.deliveries.map((d) => (
            <tr key={d.id}>
              <td>{formatDate(d.createdAt)}</td>
              <td>{eventName(d.event)}</td>
              <td>
                {tk(`delivery_${d.status}`)}
                {d.responseCode != null && ` (${d.responseCode})`}
                {d.lastError && d.status !== "delivered" && <span class="muted"> — {d.lastError}</span>}
                {d.nextAttemptAt && <span class="muted"> — {t("nextAttempt", { at: formatDate(d.nextAttemptAt) })}</span>}
              </td>
              <td>{d.attempts}</td>
              <td>
                <button type="button" class="secondary" onClick={() => redeliver(d.id)}>
                  {t("redeliver")}
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function useRefresh(f: () => void) {
  useEffect(() => {
    const id = setInterval(f, 2000);
    return () => clearInterval(id);
  }, []);
}
