import { useState } from "preact/hooks";
import { api, ok } from "../api/client";
import { ErrorBox, FieldError, Page } from "../components/ui";
import type { ErrorContext } from "../api/errors";
import { t } from "../i18n";
import { refreshUser, useUser } from "../session";

const CONTEXTS: Record<string, ErrorContext> = { avatar: "image", password: "passwordChange" };

export function Profile() {
  const user = useUser();
  const [name, setName] = useState(user?.name ?? "");
  const [current, setCurrent] = useState("");
  const [next, setNext] = useState("");
  const [revoke, setRevoke] = useState(true);
  const [error, setError] = useState<unknown>(null);
  const [failed, setFailed] = useState("");
  const [saved, setSaved] = useState("");

  async function run(what: string, f: () => Promise<unknown>) {
    setError(null);
    setFailed(what);
    setSaved("");
    try {
      await f();
      await refreshUser();
      setSaved(what);
    } catch (e) {
      setError(e);
    }
  }
  const saveName = (e: Event) => {
    e.preventDefault();
    run("name", () => ok(api.PUT("/auth/profile", { body: { name } })));
  };
  const uploadAvatar = (input: HTMLInputElement) => {
    const file = input.files?.[0];
    if (!file) return;
    run("avatar", () =>
      ok(
        api.PUT("/auth/avatar", {
          body: { file: "" },
          bodySerializer: () => {
            const form = new FormData();
            form.append("file", file, file.name);
            return form;
          },
        }),
      ),
    ).finally(() => (input.value = ""));
  };
  const changePassword = (e: Event) => {
    e.preventDefault();
    run("password", () =>
      ok(api.POST("/auth/change-password", { body: { currentPassword: current, newPassword: next, revokeOtherSessions: revoke } })).then(() => {
        setCurrent("");
        setNext("");
      }),
    );
  };
  if (!user) return null;
  return (
    <Page title={t("profile")}>
      <ErrorBox error={error} ctx={CONTEXTS[failed]} fields={["name", "currentPassword", "newPassword"]} />
      {saved && (
        <p role="status" class="ok">
          {t("saved")}
        </p>
      )}
      <section class="panel stack narrow" aria-labelledby="avatar-h">
        <h2 id="avatar-h">{t("avatar")}</h2>
        {user.image ? <img src={user.image} alt={t("avatar")} class="avatar" /> : <div class="avatar placeholder" aria-hidden="true">{user.name.slice(0, 1)}</div>}
        <label>
          {t("changeAvatar")}
          <input type="file" accept="image/png,image/jpeg,image/webp" onChange={(e) => uploadAvatar(e.currentTarget)} />
        </label>
        {user.image && (
          <button type="button" class="secondary" onClick={() => run("avatar", () => ok(api.DELETE("/auth/avatar")))}>
            {t("removeAvatar")}
          </button>
        )}
      </section>
      <form class="panel stack narrow" onSubmit={saveName} aria-labelledby="name-h">
        <h2 id="name-h">{t("profile")}</h2>
        <p class="muted">{user.email}</p>
        <label>
          {t("name")}
          <input name="name" value={name} required onInput={(e) => setName(e.currentTarget.value)} autocomplete="name" />
        </label>
        {failed === "name" && <FieldError error={error} field="name" />}
        <button type="submit">{t("save")}</button>
      </form>
      <form class="panel stack narrow" onSubmit={changePassword} aria-labelledby="pw-h">
        <h2 id="pw-h">{t("changePassword")}</h2>
        <label>
          {t("currentPassword")}
          <input type="password" name="currentPassword" value={current} required autocomplete="current-password" onInput={(e) => setCurrent(e.currentTarget.value)} />
        </label>
        <FieldError error={error} field="currentPassword" ctx="passwordChange" />
        <label>
          {t("newPassword")}
          <input type="password" name="newPassword" value={next} required autocomplete="new-password" onInput={(e) => setNext(e.currentTarget.value)} />
        </label>
        <FieldError error={error} field="newPassword" />
        <label class="inline">
          <input type="checkbox" checked={revoke} onChange={(e) => setRevoke(e.currentTarget.checked)} />
          {t("revokeOthers")}
        </label>
        <button type="submit">{t("changePassword")}</button>
      </form>
    </Page>
  );
}
