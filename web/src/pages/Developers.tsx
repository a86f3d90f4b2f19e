import { useState } from "preact/hooks";
import { api, ok } from "../api/client";
import type { CreatedKey, KeyList, KeyScope } from "../api/models";
import { ErrorBox, FieldError, Loading, Page, tk, useAction, useLoad } from "../components/ui";
import { formatDate, t } from "../i18n";
import { Webhooks } from "./Webhooks";

const SCOPES: KeyScope[] = ["read", "write", "publish"];

/** API keys: create (the key shown once), list, revoke. */
export function Developers() {
  const { data, error, reload } = useLoad(() => ok(api.GET("/keys")) as Promise<KeyList>, []);
  const action = useAction();
  const [name, setName] = useState("");
  const [scopes, setScopes] = useState<KeyScope[]>(["read", "write"]);
  const [made, setMade] = useState<CreatedKey | null>(null);
  const [copied, setCopied] = useState(false);

  async function create(e: Event) {
    e.preventDefault();
    setCopied(false);
    const done = await action.run(async () => {
      const key = (await ok(api.POST("/keys", { body: { name, scopes } }))) as CreatedKey;
      setMade(key);
    });
    if (done) {
      setName("");
      reload();
    }
  }
  async function revoke(id: string, keyName: string) {
    if (!confirm(t("confirmRevokeKey", { name: keyName }))) return;
    if (await action.run(() => ok(api.DELETE("/keys/{id}", { params: { path: { id } } })))) reload();
  }
  async function copy(key: string) {
    try {
      await navigator.clipboard.writeText(key);
      setCopied(true);
    } catch {
      setCopied(false);
    }
  }
  const toggle = (s: KeyScope) => setScopes(scopes.includes(s) ? scopes.filter((x) => x !== s) : [...scopes, s]);

  return (
    <Page title={t("developers")}>
      <p class="muted">{t("keysIntro")}</p>
      <ErrorBox error={error || action.error} fields={["name"]} />
      {made && (
        <div class="panel" role="status" aria-label={t("newKey")}>
          <p>
            <strong>{t("keyShownOnce")}</strong>
          </p>
          <label>
            {t("apiKey")}
            <input type="text" readOnly value={made.key} data-testid="new-key" onFocus={(e) => e.currentTarget.select()} />
          </label>
          <div class="actions">
            <button type="button" onClick={() => copy(made.key)}>
              {copied ? t("copied") : t("copy")}
            </button>
            <button type="button" class="secondary" onClick={() => setMade(null)}>
              {t("done")}
            </button>
          </div>
        </div>
      )}
      <form class="panel" onSubmit={create} aria-label={t("newKey")}>
        <h2>{t("newKey")}</h2>
        <label>
          {t("keyName")}
          <input type="text" name="name" required maxLength={100} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </label>
        <FieldError error={action.error} field="name" />
        <fieldset class="choice">
          <legend>{t("keyScopes")}</legend>
          {SCOPES.map((s) => (
            <label class="inline" key={s}>
              <input type="checkbox" checked={scopes.includes(s)} onChange={() => toggle(s)} />
              {tk(`scope_${s}`)}
            </label>
          ))}
        </fieldset>
        <button type="submit" disabled={!name.trim() || scopes.length === 0}>
          {t("createKey")}
        </button>
      </form>
      {!data && !error && <Loading />}
      {data && data.keys.length === 0 && <p class="muted">{t("noKeys")}</p>}
      {data && data.keys.length > 0 && (
        <div class="table-wrap" tabIndex={0} role="region" aria-label={t("apiKeys")}>
        <table>
          <thead>
            <tr>
              <th scope="col">{t("keyName")}</th>
              <th scope="col">{t("keyPrefix")}</th>
              <th scope="col">{t("keyScopes")}</th>
              <th scope="col">{t("keyCreated")}</th>
              <th scope="col">{t("keyLastUsed")}</th>
              <th scope="col">
                <span class="sr-only">{t("revoke")}</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {data.keys.map((k) => (
              <tr key={k.id}>
                <td>{k.name}</td>
                <td>
                  <code>{k.prefix}…</code>
                </td>
                <td>{k.scopes.map((s) => tk(`scope_${s}`)).join(", ")}</td>
                <td>{formatDate(k.createdAt)}</td>
                <td>{k.lastUsedAt ? formatDate(k.lastUsedAt) : t("never")}</td>
                <td>
                  <button type="button" class="secondary" onClick={() => revoke(k.id, k.name)} aria-label={`${t("revoke")} ${k.name}`}>
                    {t("revoke")}
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        </div>
      )}
      <Webhooks />
    </Page>
  );
}
