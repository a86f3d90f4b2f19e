import { useState } from "preact/hooks";
import { api, ok } from "../api/client";
import type { Connect, IntegrationList, Provider } from "../api/models";
import { ErrorBox, Loading, Page, useLoad } from "../components/ui";
import { formatDate, t } from "../i18n";
import { useLocation } from "../router";
import { PROVIDERS, PROVIDER_NAMES } from "./ScheduleForms";

export function Integrations() {
  const { query } = useLocation();
  const { data, error, reload } = useLoad(() => ok(api.GET("/integrations")) as Promise<IntegrationList>, []);
  const [actionError, setActionError] = useState<unknown>(null);
  const [busy, setBusy] = useState("");
  const connected = query.get("connected");
  const failed = query.get("error");

  async function connect(provider: string) {
    setActionError(null);
    setBusy(provider);
    try {
      const c = (await ok(api.POST("/integrations/{provider}/connect", { params: { path: { provider: provider as Provider } } }))) as Connect;
      // The platform asks the user, then sends the browser to the callback,
      // which brings it back here.
      location.assign(c.authorizeUrl);
    } catch (e) {
      setActionError(e);
      setBusy("");
    }
  }
  async function disconnect(provider: string) {
    setActionError(null);
    try {
      await ok(api.DELETE("/integrations/{provider}", { params: { path: { provider: provider as Provider } } }));
      reload();
    } catch (e) {
      setActionError(e);
    }
  }
  return (
    <Page title={t("integrations")}>
      {connected && (
        <p role="status" class="ok">
          {t("connectedOk", { p: PROVIDER_NAMES[connected] ?? connected })}
        </p>
      )}
      {failed && (
        <p role="alert" class="error">
          {failed}
        </p>
      )}
      <ErrorBox error={error || actionError} />
      {!data && !error && <Loading />}
      {data && (
        <ul class="cards" aria-label={t("integrations")}>
          {PROVIDERS.map((p) => {
            const i = data.integrations.find((x) => x.provider === p);
            return (
              <li key={p} class="card">
                <div class="card-body">
                  <h2>{PROVIDER_NAMES[p]}</h2>
                  {i ? (
                    <>
                      <p class="ok">{t("connected", { name: i.accountName || i.accountId })}</p>
                      <p class="muted small">{formatDate(i.connectedAt)}</p>
                      <button type="button" class="secondary" onClick={() => disconnect(p)} aria-label={`${t("disconnect")} ${PROVIDER_NAMES[p]}`}>
                        {t("disconnect")}
                      </button>
                    </>
                  ) : data.available.includes(p) ? (
                    <>
                      <p class="muted">{t("notConnected")}</p>
                      <button type="button" disabled={busy === p} onClick={() => connect(p)} aria-label={`${t("connect")} ${PROVIDER_NAMES[p]}`}>
                        {t("connect")}
                      </button>
                    </>
                  ) : (
                    <p class="muted" data-testid={`unavailable-${p}`}>
                      {t("providerUnavailable")}
                    </p>
                  )}
                </div>
              </li>
            );
          })}
        </ul>
      )}
    </Page>
  );
}
