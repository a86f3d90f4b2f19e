import { useEffect, useState } from "preact/hooks";
import { api, ok } from "../api/client";
import type { Balance, Project, ProjectPage } from "../api/models";
import { ErrorBox, Loading, Page, Progress, useLoad } from "../components/ui";
import { t, tn, type Key } from "../i18n";
import { navigate } from "../router";

const LIMIT = 12;

export function stepPercent(p: Project): number {
  const s = p.stepProgress;
  return Math.round((s.download * 10 + s.transcribe * 40 + s.cut * 5 + s.caption * 45) / 100);
}

export function isRunning(p: { state: string }): boolean {
  return !["completed", "failed", "cancelled"].includes(p.state);
}

/** The project's state in the console's language (the API's `status` is Portuguese). */
export function StateLabel({ state }: { state: string }) {
  return (
    <span class={`status status-${state}`} data-testid="project-status" data-state={state}>
      {t(("state_" + state) as Key)}
    </span>
  );
}

export function CreditsSummary() {
  const { data } = useLoad(() => ok(api.GET("/credits")) as Promise<Balance>, []);
  if (!data) return null;
  return (
    <p class="credits-summary" data-testid="credits-left">
      <a href="/credits">
        {t("plan")}: <strong>{data.plan}</strong> ·{" "}
        {data.unlimited ? t("unlimited") : t("creditsLeft", { n: data.credits, total: data.totalCredits })}
      </a>
    </p>
  );
}

export function Dashboard() {
  const [page, setPage] = useState(1);
  const { data, error, reload } = useLoad(
    () => ok(api.GET("/projects", { params: { query: { page, limit: LIMIT } } })) as Promise<ProjectPage>,
    [page],
  );
  // Projects in progress: refresh the list while any is running.
  useEffect(() => {
    if (!data || !data.projects.some(isRunning)) return;
    const timer = setTimeout(reload, 2000);
    return () => clearTimeout(timer);
  }, [data]);
  const pages = data ? Math.max(1, Math.ceil(data.total / LIMIT)) : 1;
  return (
    <Page
      title={t("projects")}
      actions={
        <button type="button" onClick={() => navigate("/projects/new")}>
          {t("newProject")}
        </button>
      }
    >
      <CreditsSummary />
      <ErrorBox error={error} />
      {!data && !error && <Loading />}
      {data && data.projects.length === 0 && <p class="empty">{t("noProjects")}</p>}
      {data && data.projects.length > 0 && (
        <ul class="cards" aria-label={t("projects")}>
          {data.projects.map((p) => (
            <li key={p.id} class="card project-card">
              {p.thumbnail ? <img src={p.thumbnail} alt="" class="thumb" loading="lazy" /> : <div class="thumb placeholder" aria-hidden="true" />}
              <div class="card-body">
                <h2>
                  <a href={`/projects/${p.id}`}>{p.title}</a>
                </h2>
                <p class="meta">
                  <StateLabel state={p.state} /> · {p.duration} · {p.date}
                  {p.state === "completed" && <> · {tn("clipsCount", p.clips)}</>}
                </p>
                {isRunning(p) && <Progress label={t("progress")} value={stepPercent(p)} />}
              </div>
            </li>
          ))}
        </ul>
      )}
      {pages > 1 && (
        <nav class="pager" aria-label={t("pageOf", { p: page, n: pages })}>
          <button type="button" class="secondary" disabled={page <= 1} onClick={() => setPage(page - 1)}>
            {t("previous")}
          </button>
          <span>{t("pageOf", { p: page, n: pages })}</span>
          <button type="button" class="secondary" disabled={page >= pages} onClick={() => setPage(page + 1)}>
            {t("next")}
          </button>
        </nav>
      )}
    </Page>
  );
}
