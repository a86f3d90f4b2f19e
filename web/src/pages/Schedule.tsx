import { useEffect, useMemo, useState } from "preact/hooks";
import { api, ok } from "../api/client";
import type { Post, PostPage } from "../api/models";
import { ErrorBox, Loading, Page, useLoad } from "../components/ui";
import { t } from "../i18n";
import { addDays, addMonths, dayLabel, DayPosts, MonthGrid, monthLabel, postsByDay, today, WeekAgenda, weekLabel } from "./Calendar";

const LIMIT = 100;
const PHONE = "(max-width: 640px)";

/** Every scheduled post, page by page (the API gives at most 100 at once). */
async function allPosts(): Promise<Post[]> {
  const posts: Post[] = [];
  for (let page = 1; ; page++) {
    const r = (await ok(api.GET("/clips/scheduled", { params: { query: { page, limit: LIMIT } } }))) as PostPage;
    posts.push(...r.scheduledPosts);
    if (r.scheduledPosts.length < LIMIT || posts.length >= r.total) return posts;
  }
}

export function Schedule() {
  const { data, error, reload } = useLoad(allPosts, []);
  const [view, setView] = useState<"month" | "week">(() => (matchMedia(PHONE).matches ? "week" : "month"));
  const [selected, setSelected] = useState(today);
  const days = useMemo(() => postsByDay(data ?? []), [data]);
  // Follow pending posts until the scheduler has published them.
  useEffect(() => {
    if (!data || !data.some((p) => p.status === "pending" || p.status === "publishing")) return;
    const timer = setTimeout(reload, 3000);
    return () => clearTimeout(timer);
  }, [data]);

  const month = view === "month";
  const step = (n: number) => setSelected(month ? addMonths(selected, n) : addDays(selected, 7 * n));
  return (
    <Page
      title={t("schedule")}
      actions={
        <div class="segmented" role="group" aria-label={t("calendarView")}>
          <button type="button" class="secondary" aria-pressed={month} onClick={() => setView("month")}>
            {t("viewMonth")}
          </button>
          <button type="button" class="secondary" aria-pressed={!month} onClick={() => setView("week")}>
            {t("viewWeek")}
          </button>
        </div>
      }
    >
      <ErrorBox error={error} />
      {data && data.length === 0 && <p class="muted">{t("noPosts")}</p>}
      <div class="cal-head">
        <h2 id="period-h" aria-live="polite">
          {month ? monthLabel(selected) : weekLabel(selected)}
        </h2>
        <div class="row">
          <button type="button" class="secondary small" onClick={() => step(-1)}>
            {month ? t("prevMonth") : t("prevWeek")}
          </button>
          <button type="button" class="secondary small" onClick={() => setSelected(today())}>
            {t("today")}
          </button>
          <button type="button" class="secondary small" onClick={() => step(1)}>
            {month ? t("nextMonth") : t("nextWeek")}
          </button>
        </div>
      </div>
      {!data && !error && <Loading />}
      {data && month && (
        <>
          <MonthGrid selected={selected} days={days} onSelect={setSelected} labelledBy="period-h" />
          <section class="day" aria-labelledby="day-h">
            <h2 id="day-h">{dayLabel(selected)}</h2>
            <DayPosts posts={days.get(selected)} onChanged={reload} />
          </section>
        </>
      )}
      {data && !month && <WeekAgenda selected={selected} days={days} onChanged={reload} />}
    </Page>
  );
}
