import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import { api, ok } from "../api/client";
import type { NotificationList } from "../api/models";
import { getLang, setLang, t, tn, type Lang } from "../i18n";
import { navigate, useLocation } from "../router";
import { setUser, useUser } from "../session";

const unreadListeners = new Set<() => void>();
/** Tells the header to count unread notifications again. */
export function unreadChanged() {
  unreadListeners.forEach((f) => f());
}

function useUnread(): number {
  const [n, setN] = useState(0);
  useEffect(() => {
    let live = true;
    const load = () =>
      ok(api.GET("/notifications"))
        .then((d) => {
          const list = (d as NotificationList).notifications;
          if (live) setN(list.filter((x) => !x.read).length);
        })
        .catch(() => {});
    load();
    unreadListeners.add(load);
    const timer = setInterval(load, 15000);
    return () => {
      live = false;
      unreadListeners.delete(load);
      clearInterval(timer);
    };
  }, []);
  return n;
}

export function LangSwitch() {
  return (
    <label class="lang">
      <span class="sr-only">{t("language")}</span>
      <select
        aria-label={t("language")}
        value={getLang()}
        onChange={(e) => setLang((e.target as HTMLSelectElement).value as Lang)}
      >
        <option value="en">English</option>
        <option value="pt">Português</option>
      </select>
    </label>
  );
}

export function Layout({ children }: { children: ComponentChildren }) {
  const user = useUser();
  const unread = useUnread();
  const { path } = useLocation();
  const links: [string, string][] = [
    ["/", t("projects")],
    ["/templates", t("templates")],
    ["/schedule", t("schedule")],
    ["/integrations", t("integrations")],
    ["/credits", t("credits")],
    ["/developers", t("developers")],
  ];
  // Phones: the navigation folds behind a Menu button (closed again on
  // every page change); wider screens show it as a row.
  const [open, setOpen] = useState(false);
  useEffect(() => setOpen(false), [path]);
  const current = (href: string) =>
    href === "/" ? path === "/" || path.startsWith("/projects") : path.startsWith(href);
  async function signOut() {
    await api.POST("/auth/sign-out").catch(() => {});
    setUser(null);
    navigate("/sign-in");
  }
  return (
    <>
      <a class="skip" href="#main">
        {t("skip")}
      </a>
      <header class={open ? "top open" : "top"}>
        <a href="/" class="brand">
          Clipforge
        </a>
        <button
          type="button"
          class="secondary menu-toggle"
          aria-expanded={open}
          aria-controls="main-nav"
          onClick={() => setOpen(!open)}
        >
          {t("menu")}
          {unread > 0 && (
            <span class="badge">
              <span aria-hidden="true">{unread}</span>
              <span class="sr-only">{tn("unread", unread)}</span>
            </span>
          )}
        </button>
        <nav id="main-nav" aria-label={t("nav")}>
          <ul>
            {links.map(([href, label]) => (
              <li key={href}>
                <a href={href} aria-current={current(href) ? "page" : undefined}>
                  {label}
                </a>
              </li>
            ))}
            <li>
              <a href="/notifications" aria-current={current("/notifications") ? "page" : undefined}>
                {t("notifications")}
                {unread > 0 && (
                  <span class="badge">
                    <span aria-hidden="true">{unread}</span>
                    <span class="sr-only">{tn("unread", unread)}</span>
                  </span>
                )}
              </a>
            </li>
            <li>
              <a href="/profile" aria-current={current("/profile") ? "page" : undefined}>
                {user?.image && <img class="avatar-sm" src={user.image} alt="" />}
                {t("profile")}
              </a>
            </li>
          </ul>
        </nav>
        <div class="top-right">
          <LangSwitch />
          <button type="button" class="secondary" onClick={signOut}>
            {t("signOut")}
          </button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        {children}
      </main>
    </>
  );
}
