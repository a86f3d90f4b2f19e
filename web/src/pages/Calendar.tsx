// The schedule's calendar: local calendar days as "YYYY-MM-DD" keys, a
// month grid (the WAI-ARIA date grid: one tab stop, arrow keys move by day
// and week, Home/End to the week's ends, PageUp/PageDown by month) and a
// week agenda for narrow screens.
import { useLayoutEffect, useRef } from "preact/hooks";
import type { Post } from "../api/models";
import { getLang, t, tn } from "../i18n";
import { localInput } from "./ScheduleForms";
import { PostRow, timeOf } from "./PostRow";

const pad = (n: number) => String(n).padStart(2, "0");
const locale = () => (getLang() === "pt" ? "pt-BR" : "en");

export function dayKey(d: Date): string {
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
}
export function fromKey(key: string): Date {
  const [y, m, d] = key.split("-").map(Number);
  return new Date(y, m - 1, d);
}
export const today = () => dayKey(new Date());
export function addDays(key: string, n: number): string {
  const d = fromKey(key);
  d.setDate(d.getDate() + n);
  return dayKey(d);
}
/** The same day `n` months later, or that month's last day. */
export function addMonths(key: string, n: number): string {
  const d = fromKey(key);
  const target = new Date(d.getFullYear(), d.getMonth() + n, 1);
  const last = new Date(target.getFullYear(), target.getMonth() + 1, 0).getDate();
  target.setDate(Math.min(d.getDate(), last));
  return dayKey(target);
}
/** The Sunday that starts `key`'s week. */
export const weekStart = (key: string) => addDays(key, -fromKey(key).getDay());
export const weekOf = (key: string) => Array.from({ length: 7 }, (_, i) => addDays(weekStart(key), i));

/** Posts by local day, each day in time order. */
export function postsByDay(posts: Post[]): Map<string, Post[]> {
  const days = new Map<string, Post[]>();
  for (const p of [...posts].sort((a, b) => a.scheduledAt.localeCompare(b.scheduledAt))) {
    const key = localInput(new Date(p.scheduledAt)).slice(0, 10);
    days.set(key, [...(days.get(key) ?? []), p]);
  }
  return days;
}

export function dayLabel(key: string): string {
  return fromKey(key).toLocaleDateString(locale(), { weekday: "long", year: "numeric", month: "long", day: "numeric" });
}
export function monthLabel(key: string): string {
  return fromKey(key).toLocaleDateString(locale(), { year: "numeric", month: "long" });
}
export function weekLabel(key: string): string {
  const days = weekOf(key);
  const f = (k: string) => fromKey(k).toLocaleDateString(locale(), { month: "short", day: "numeric" });
  return `${f(days[0])} – ${f(days[6])}, ${fromKey(days[6]).getFullYear()}`;
}
const postCount = (n: number) => (n === 0 ? t("noPostsDay") : tn("nPosts", n));

/** A cell's content: the whole date and its post count for screen readers;
 * on screen only the day's number and the posts (hidden from the name). */
function DayCell({ day, posts }: { day: string; posts: Post[] }) {
  return (
    <>
      <span class="sr-only">
        {dayLabel(day)}: {postCount(posts.length)}
      </span>
      <span class="daynum" aria-hidden="true">
        {fromKey(day).getDate()}
      </span>
      {posts.slice(0, 2).map((p) => (
        <span key={p.id} class={`chip chip-${p.status}`} aria-hidden="true">
          {timeOf(p.scheduledAt)} {p.title}
        </span>
      ))}
      {posts.length > 2 && (
        <span class="chip more" aria-hidden="true">
          +{posts.length - 2}
        </span>
      )}
    </>
  );
}

/** The weeks (Sunday first) that show `key`'s month. */
function monthWeeks(key: string): string[][] {
  const month = fromKey(key).getMonth();
  const weeks: string[][] = [];
  let start = weekStart(key.slice(0, 8) + "01");
  do {
    weeks.push(weekOf(start));
    start = addDays(start, 7);
  } while (fromKey(start).getMonth() === month);
  return weeks;
}

const MOVES: Record<string, (k: string) => string> = {
  ArrowLeft: (k) => addDays(k, -1),
  ArrowRight: (k) => addDays(k, 1),
  ArrowUp: (k) => addDays(k, -7),
  ArrowDown: (k) => addDays(k, 7),
  Home: (k) => weekStart(k),
  End: (k) => addDays(weekStart(k), 6),
  PageUp: (k) => addMonths(k, -1),
  PageDown: (k) => addMonths(k, 1),
};

type Days = Map<string, Post[]>;

export function MonthGrid({ selected, days, onSelect, labelledBy }: { selected: string; days: Days; onSelect: (k: string) => void; labelledBy: string }) {
  const table = useRef<HTMLTableElement>(null);
  const moved = useRef(false);
  // Focus follows the keys at once (a layout effect, so quick presses
  // never leave the focus behind the selection).
  useLayoutEffect(() => {
    if (!moved.current) return;
    moved.current = false;
    table.current?.querySelector<HTMLButtonElement>('button[tabindex="0"]')?.focus();
  }, [selected]);
  function onKeyDown(e: KeyboardEvent) {
    const move = MOVES[e.key];
    if (!move || e.altKey || e.ctrlKey || e.metaKey) return;
    e.preventDefault();
    moved.current = true;
    onSelect(move(selected));
  }
  const month = fromKey(selected).getMonth();
  const now = today();
  const weekdays = weekOf(selected).map((k) => fromKey(k));
  return (
    <table ref={table} role="grid" class="calendar" aria-labelledby={labelledBy} onKeyDown={onKeyDown}>
      <thead>
        <tr>
          {weekdays.map((d) => (
            <th key={d.getDay()} scope="col" abbr={d.toLocaleDateString(locale(), { weekday: "long" })}>
              {d.toLocaleDateString(locale(), { weekday: "short" })}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {monthWeeks(selected).map((week) => (
          <tr key={week[0]}>
            {week.map((day) => {
              const posts = days.get(day) ?? [];
              const outside = fromKey(day).getMonth() !== month;
              return (
                <td key={day} aria-selected={day === selected} class={outside ? "outside" : undefined}>
                  <button
                    type="button"
                    data-day={day}
                    tabIndex={day === selected ? 0 : -1}
                    aria-current={day === now ? "date" : undefined}
                    onClick={() => onSelect(day)}
                  >
                    <DayCell day={day} posts={posts} />
                  </button>
                </td>
              );
            })}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function DayPosts({ posts, onChanged }: { posts: Post[] | undefined; onChanged: () => void }) {
  if (!posts?.length) return <p class="muted small">{t("noPostsDay")}</p>;
  return (
    <ul class="posts">
      {posts.map((p) => (
        <PostRow key={p.id + p.status + p.scheduledAt} post={p} onChanged={onChanged} />
      ))}
    </ul>
  );
}

/** The seven days of `selected`'s week, each with its posts. */
export function WeekAgenda({ selected, days, onChanged }: { selected: string; days: Days; onChanged: () => void }) {
  const now = today();
  return (
    <ol class="agenda">
      {weekOf(selected).map((day) => (
        <li key={day} class={[day === now && "today", !days.get(day)?.length && "quiet"].filter(Boolean).join(" ") || undefined}>
          <h3 aria-current={day === now ? "date" : undefined}>{dayLabel(day)}</h3>
          <DayPosts posts={days.get(day)} onChanged={onChanged} />
        </li>
      ))}
    </ol>
  );
}
