import { api, ok } from "../api/client";
import type { NotificationList } from "../api/models";
import { worded } from "../api/notices";
import { unreadChanged } from "../components/Layout";
import { ErrorBox, Loading, Page, useLoad } from "../components/ui";
import { formatDate, t, tn } from "../i18n";

export function Notifications() {
  const { data, error, reload } = useLoad(() => ok(api.GET("/notifications")) as Promise<NotificationList>, []);
  const changed = () => {
    reload();
    unreadChanged();
  };
  async function readOne(id: string) {
    await ok(api.POST("/notifications/{id}/read", { params: { path: { id } } })).catch(() => {});
    changed();
  }
  async function readAll() {
    await ok(api.POST("/notifications/read")).catch(() => {});
    changed();
  }
  const unread = data ? data.notifications.filter((n) => !n.read).length : 0;
  return (
    <Page
      title={t("notifications")}
      actions={
        unread > 0 && (
          <button type="button" class="secondary" onClick={readAll}>
            {t("markAllRead")}
          </button>
        )
      }
    >
      <ErrorBox error={error} />
      {!data && !error && <Loading />}
      {data && <p class="muted" role="status">{tn("unread", unread)}</p>}
      {data && data.notifications.length === 0 && <p class="empty">{t("noNotifications")}</p>}
      {data && (
        <ul class="notifications">
          {data.notifications.map((n) => {
            const w = worded(n);
            return (
            <li key={n.id} class={n.read ? "read" : "unread"} data-type={n.type}>
              <div>
                <strong>{w.title}</strong>
                <p>{w.message}</p>
                <p class="muted small">{formatDate(n.createdAt)}</p>
              </div>
              {!n.read && (
                <button type="button" class="secondary small" onClick={() => readOne(n.id)} aria-label={`${t("markRead")}: ${w.title}`}>
                  {t("markRead")}
                </button>
              )}
            </li>
            );
          })}
        </ul>
      )}
    </Page>
  );
}
