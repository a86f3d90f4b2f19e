import { useEffect, useState } from "preact/hooks";
import { api, ok } from "../api/client";
import type { Post, PostPage } from "../api/models";
import { ErrorBox, Loading, Page, useLoad } from "../components/ui";
import { getLang, t, type Key } from "../i18n";
import { localInput, PROVIDER_NAMES, toUtc } from "./ScheduleForms";

/** Posts grouped by local calendar day, in time order. */
function byDay(posts: Post[]): [string, Post[]][] {
  const days = new Map<string, Post[]>();
  for (const p of [...posts].sort((a, b) => a.scheduledAt.localeCompare(b.scheduledAt))) {
    const key = localInput(new Date(p.scheduledAt)).slice(0, 10);
    days.set(key, [...(days.get(key) ?? []), p]);
  }
  return [...days.entries()];
}

function dayLabel(day: string): string {
  const d = new Date(day + "T00:00");
  return d.toLocaleDateString(getLang() === "pt" ? "pt-BR" : "en", { weekday: "long", year: "numeric", month: "long", day: "numeric" });
}

function PostRow({ post, onChanged }: { post: Post; onChanged: () => void }) {
  const [editing, setEditing] = useState(false);
  const [title, setTitle] = useState(post.title);
  const [when, setWhen] = useState(localInput(new Date(post.scheduledAt)));
  const [error, setError] = useState<unknown>(null);
  const time = new Date(post.scheduledAt).toLocaleTimeString(getLang() === "pt" ? "pt-BR" : "en", { hour: "2-digit", minute: "2-digit" });
  async function save(e: Event) {
    e.preventDefault();
    setError(null);
    try {
      await ok(api.PATCH("/clips/scheduled/{id}", { params: { path: { id: post.id } }, body: { title, scheduledAt: toUtc(when) } }));
      setEditing(false);
      onChanged();
    } catch (err) {
      setError(err);
    }
  }
  async function remove() {
    setError(null);
    try {
      await ok(api.DELETE("/clips/scheduled/{id}", { params: { path: { id: post.id } } }));
      onChanged();
    } catch (err) {
      setError(err);
    }
  }
  return (
    <li class="post" data-status={post.status}>
      <div class="post-line">
        <time dateTime={post.scheduledAt}>{time}</time>
        <span class="provider">{PROVIDER_NAMES[post.provider] ?? post.provider}</span>
        <span class="post-title">{post.title}</span>
        <span class={`status status-${post.status}`}>{t(("status_" + post.status) as Key)}</span>
        {post.status === "pending" && !editing && (
          <span class="row">
            <button type="button" class="secondary small" onClick={() => setEditing(true)} aria-label={`${t("edit")}: ${post.title}`}>
              {t("edit")}
            </button>
            <button type="button" class="danger small" onClick={remove} aria-label={`${t("delete")}: ${post.title}`}>
              {t("delete")}
            </button>
          </span>
        )}
      </div>
      {post.error && <p class="error small">{post.error}</p>}
      {editing && (
        <form class="stack inset" onSubmit={save} aria-label={`${t("edit")}: ${post.title}`}>
          <label>
            {t("postTitle")}
            <input value={title} onInput={(e) => setTitle(e.currentTarget.value)} required />
          </label>
          <label>
            {t("when")}
            <input type="datetime-local" value={when} onInput={(e) => setWhen(e.currentTarget.value)} required />
          </label>
          <div class="row">
            <button type="submit">{t("save")}</button>
            <button type="button" class="secondary" onClick={() => setEditing(false)}>
              {t("close")}
            </button>
          </div>
        </form>
      )}
      <ErrorBox error={error} />
    </li>
  );
}

export function Schedule() {
  const { data, error, reload } = useLoad(
    () => ok(api.GET("/clips/scheduled", { params: { query: { page: 1, limit: 100 } } })) as Promise<PostPage>,
    [],
  );
  useEffect(() => {
    if (!data || !data.scheduledPosts.some((p) => p.status === "pending" || p.status === "publishing")) return;
    const timer = setTimeout(reload, 3000);
    return () => clearTimeout(timer);
  }, [data]);
  return (
    <Page title={t("schedule")}>
      <ErrorBox error={error} />
      {!data && !error && <Loading />}
      {data && data.scheduledPosts.length === 0 && <p class="empty">{t("noPosts")}</p>}
      {data &&
        byDay(data.scheduledPosts).map(([day, posts]) => (
          <section key={day} class="day" aria-label={dayLabel(day)}>
            <h2>{dayLabel(day)}</h2>
            <ul class="posts">
              {posts.map((p) => (
                <PostRow key={p.id + p.status} post={p} onChanged={reload} />
              ))}
            </ul>
          </section>
        ))}
    </Page>
  );
}
