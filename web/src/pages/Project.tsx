import { useEffect, useRef, useState } from "preact/hooks";
import { api, ok } from "../api/client";
import type { ProjectDetail, StepProgress } from "../api/models";
import { Eta } from "../api/eta";
import { followStatus } from "../api/sse";
import { ErrorBox, Loading, Page, Progress, useLoad } from "../components/ui";
import { t, tn, type Key } from "../i18n";
import { navigate } from "../router";
import { ClipCard } from "./ClipCard";
import { isRunning, StateLabel } from "./Dashboard";
import { BulkSchedule, useIntegrations } from "./ScheduleForms";

const STAGES: (keyof StepProgress)[] = ["download", "transcribe", "cut", "caption"];

export function ProjectPage({ id }: { id: string }) {
  const { data, error, reload, setData } = useLoad(
    () => ok(api.GET("/projects/{id}", { params: { path: { id } } })) as Promise<ProjectDetail>,
    [id],
  );
  const [percent, setPercent] = useState<number | null>(null);
  const [actionError, setActionError] = useState<unknown>(null);
  const [bulk, setBulk] = useState(false);
  // The API forgets a cancelled project (404 afterwards): say so here.
  const [cancelled, setCancelled] = useState(false);
  const integrations = useIntegrations();
  const eta = useRef(new Eta());
  const running = data ? isRunning(data.project) : false;

  // Live progress while the project runs; the list is reloaded at the end.
  useEffect(() => {
    if (!running) return;
    return followStatus(id, {
      progress(e) {
        const now = Date.now();
        for (const s of STAGES) eta.current.note(s, e.stepProgress[s], now);
        eta.current.note("overall", e.percent, now);
        setPercent(e.percent);
        setData((d) => d && { ...d, project: { ...d.project, state: e.state, status: e.status, stepProgress: e.stepProgress } });
      },
      clip() {},
      end(kind) {
        if (kind === "cancelled") setCancelled(true);
        else reload();
      },
    });
  }, [id, running]);

  async function cancel() {
    if (!confirm(t("confirmCancel"))) return;
    setActionError(null);
    try {
      await ok(api.POST("/projects/{id}/cancel", { params: { path: { id } } }));
      setCancelled(true);
    } catch (e) {
      setActionError(e);
    }
  }
  async function remove() {
    if (!confirm(t("confirmDelete"))) return;
    try {
      await ok(api.DELETE("/projects/{id}", { params: { path: { id } } }));
      navigate("/");
    } catch (e) {
      setActionError(e);
    }
  }

  if (cancelled) {
    return (
      <Page title={data?.project.title ?? t("projects")}>
        <p role="status" class="notice">
          {t("cancelledNote")}
        </p>
        <a href="/">{t("back")}</a>
      </Page>
    );
  }
  if (error) {
    return (
      <Page title={t("projects")}>
        <ErrorBox error={error} />
        <a href="/">{t("back")}</a>
      </Page>
    );
  }
  if (!data) return <Loading />;
  const p = data.project;
  return (
    <Page
      title={p.title}
      actions={
        <>
          {running && (
            <button type="button" class="danger" onClick={cancel}>
              {t("cancelProcessing")}
            </button>
          )}
          {!running && data.clips.length > 0 && (
            <button type="button" class="secondary" onClick={() => setBulk(!bulk)} aria-expanded={bulk}>
              {t("scheduleAll")}
            </button>
          )}
          {!running && (
            <button type="button" class="secondary" onClick={remove}>
              {t("delete")}
            </button>
          )}
        </>
      }
    >
      <p class="meta">
        <StateLabel state={p.state} />{" "}
        · {p.duration} · {p.date}
      </p>
      {p.state === "failed" && p.error && <p class="error">{t("failed", { m: p.error })}</p>}
      <ErrorBox error={actionError} />
      {running && (
        <section class="panel" aria-labelledby="progress-h">
          <h2 id="progress-h">{t("progress")}</h2>
          <div aria-live="polite">
            {STAGES.map((s) => (
              <Progress key={s} label={t(("stage_" + s) as Key)} value={p.stepProgress[s]} note={left(eta.current.remaining(s))} />
            ))}
            {percent !== null && <Progress label={t("overall")} value={percent} note={left(eta.current.remaining("overall"))} />}
          </div>
          <p class="muted small">{t("notifyWhenDone")}</p>
        </section>
      )}
      {bulk && <BulkSchedule projectId={p.id} integrations={integrations} onDone={() => setBulk(false)} />}
      {!running && (
        <section aria-labelledby="clips-h">
          <h2 id="clips-h">{t("clips")}</h2>
          {data.clips.length === 0 ? (
            <p class="empty">{t("noClips")}</p>
          ) : (
            <div class="clips">
              {data.clips.map((c) => (
                <ClipCard key={c.id} clip={c} integrations={integrations} />
              ))}
            </div>
          )}
        </section>
      )}
      {p.state === "completed" && data.clips.length > 0 && (
        <section class="panel" aria-labelledby="export-h">
          <h2 id="export-h">{t("export")}</h2>
          <p class="muted small">{t("exportHint")}</p>
          <div class="downloads">
            {EXPORTS.map(([format, label]) => (
              <a key={format} class="button secondary" href={`/api/projects/${p.id}/export?format=${format}`} download>
                {t(label)}
              </a>
            ))}
          </div>
        </section>
      )}
    </Page>
  );
}

/** Seconds left as words ("about 3 minutes left"), or null. */
function left(secs: number | null): string | null {
  if (secs === null || !isFinite(secs)) return null;
  if (secs < 60) return t("etaSoon");
  return tn("etaMinutes", Math.round(secs / 60));
}

/** The editor exports of a finished project (`GET /api/projects/:id/export`). */
const EXPORTS: [string, Key][] = [
  ["fcpxml", "exportFcpxml"],
  ["edl", "exportEdl"],
  ["otio", "exportOtio"],
  ["zip", "exportZip"],
];
