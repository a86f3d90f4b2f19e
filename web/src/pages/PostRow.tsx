import { useState } from "preact/hooks";
import { api, ok } from "../api/client";
import type { Post } from "../api/models";
import { ErrorBox, useAction } from "../components/ui";
import { getLang, t, type Key } from "../i18n";
import { FIELDS, FormButtons, localInput, PROVIDER_NAMES, TitleField, toUtc, WhenField } from "./ScheduleForms";

export function timeOf(iso: string): string {
  return new Date(iso).toLocaleTimeString(getLang() === "pt" ? "pt-BR" : "en", { hour: "2-digit", minute: "2-digit" });
}

/** One scheduled post; while it is pending it can be edited or deleted; a
 * failed one says why and can be tried again (now, or at a new time) or
 * deleted. */
export function PostRow({ post, onChanged }: { post: Post; onChanged: () => void }) {
  const [editing, setEditing] = useState(false);
  const [title, setTitle] = useState(post.title);
  const failed = post.status === "failed";
  // A failed post's time is past: a new one defaults to ten minutes ahead.
  const [when, setWhen] = useState(localInput(new Date(failed ? Date.now() + 600_000 : post.scheduledAt)));
  const action = useAction();
  const id = { params: { path: { id: post.id } } };
  async function save(e: Event) {
    e.preventDefault();
    if (await action.run(() => ok(api.PATCH("/clips/scheduled/{id}", { ...id, body: { title, scheduledAt: toUtc(when) } })))) {
      setEditing(false);
      onChanged();
    }
  }
  async function retryNow() {
    const soon = new Date(Date.now() + 5_000).toISOString();
    if (await action.run(() => ok(api.PATCH("/clips/scheduled/{id}", { ...id, body: { scheduledAt: soon } })))) onChanged();
  }
  async function remove() {
    if (!confirm(t("confirmDeletePost", { title: post.title }))) return;
    if (await action.run(() => ok(api.DELETE("/clips/scheduled/{id}", id)))) onChanged();
  }
  const name = `${post.title}, ${timeOf(post.scheduledAt)}`;
  return (
    <li class="post" data-status={post.status}>
      <div class="post-line">
        <time dateTime={post.scheduledAt}>{timeOf(post.scheduledAt)}</time>
        <span class="provider">{PROVIDER_NAMES[post.provider] ?? post.provider}</span>
        <span class="post-title">{post.title}</span>
        <span class={`status status-${post.status}`}>{t(("status_" + post.status) as Key)}</span>
        {post.status === "pending" && !editing && (
          <span class="row">
            <button type="button" class="secondary small" onClick={() => setEditing(true)} aria-label={`${t("edit")}: ${name}`}>
              {t("edit")}
            </button>
            <button type="button" class="danger small" onClick={remove} aria-label={`${t("delete")}: ${name}`}>
              {t("delete")}
            </button>
          </span>
        )}
        {failed && !editing && (
          <span class="row">
            <button type="button" class="small" onClick={retryNow} aria-label={`${t("retryNow")}: ${name}`}>
              {t("retryNow")}
            </button>
            <button type="button" class="secondary small" onClick={() => setEditing(true)} aria-label={`${t("reschedule")}: ${name}`}>
              {t("reschedule")}
            </button>
            <button type="button" class="danger small" onClick={remove} aria-label={`${t("delete")}: ${name}`}>
              {t("delete")}
            </button>
          </span>
        )}
      </div>
      {post.error && <p class="error small">{failed ? t("failedBecause", { m: post.error }) : post.error}</p>}
      {editing && (
        <form class="stack inset" onSubmit={save} aria-label={`${failed ? t("reschedule") : t("edit")}: ${name}`}>
          <TitleField value={title} onChange={setTitle} error={action.error} />
          <WhenField value={when} onChange={setWhen} error={action.error} />
          <FormButtons onClose={() => setEditing(false)} />
        </form>
      )}
      <ErrorBox error={action.error} fields={editing ? FIELDS : []} />
    </li>
  );
}
