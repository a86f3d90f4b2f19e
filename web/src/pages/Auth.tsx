import { useEffect, useState } from "preact/hooks";
import { api, ok } from "../api/client";
import { LangSwitch } from "../components/Layout";
import { ErrorBox, FieldError } from "../components/ui";
import { t } from "../i18n";
import { setUser } from "../session";

export function Auth({ mode }: { mode: "in" | "up" }) {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [name, setName] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const title = mode === "up" ? t("signUpTitle") : t("signInTitle");
  useEffect(() => {
    document.title = `${title} · Clipforge`;
    setError(null);
  }, [title]);

  async function submit(e: Event) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const s =
        mode === "up"
          ? await ok(api.POST("/auth/sign-up/email", { body: { email, password, name } }))
          : await ok(api.POST("/auth/sign-in/email", { body: { email, password } }));
      setUser(s.user);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }

  const next = location.search;
  return (
    <main id="main" class="auth">
      <div class="auth-card">
        <div class="auth-top">
          <span class="brand">Clipforge</span>
          <LangSwitch />
        </div>
        <h1>{title}</h1>
        <p class="muted">{t("tagline")}</p>
        <form onSubmit={submit}>
          {mode === "up" && (
            <label>
              {t("name")}
              <input name="name" autocomplete="name" required value={name} onInput={(e) => setName(e.currentTarget.value)} />
            </label>
          )}
          {mode === "up" && <FieldError error={error} field="name" />}
          <label>
            {t("email")}
            <input type="email" name="email" autocomplete="email" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
          </label>
          <FieldError error={error} field="email" />
          <label>
            {t("password")}
            <input
              type="password"
              name="password"
              autocomplete={mode === "up" ? "new-password" : "current-password"}
              required
              minLength={mode === "up" ? 8 : undefined}
              value={password}
              onInput={(e) => setPassword(e.currentTarget.value)}
            />
          </label>
          <FieldError error={error} field="password" />
          <ErrorBox error={error} fields={["name", "email", "password"]} />
          <button type="submit" disabled={busy}>
            {mode === "up" ? t("signUp") : t("signIn")}
          </button>
        </form>
        <p>
          {mode === "up" ? t("haveAccount") : t("noAccount")}{" "}
          <a href={(mode === "up" ? "/sign-in" : "/sign-up") + next}>{mode === "up" ? t("signIn") : t("signUp")}</a>
        </p>
      </div>
    </main>
  );
}
