import { useEffect, useRef, useState } from "preact/hooks";
import { api, ok } from "../api/client";
import type { Balance, LedgerPage } from "../api/models";
import { ErrorBox, Loading, Page, useLoad } from "../components/ui";
import { formatDate, t, tn, type Key } from "../i18n";
import { Plans } from "./Plans";

const LIMIT = 20;

/** "Scroll sideways" above a table that is wider than its box (a phone),
 * until it has been scrolled to its end; the box also shades the side
 * that has more (styles.css, .table-wrap). */
function ScrollCue({ target }: { target: { current: HTMLElement | null } }) {
  const [more, setMore] = useState(false);
  useEffect(() => {
    const el = target.current;
    if (!el) return;
    const check = () => setMore(el.scrollWidth - el.clientWidth - el.scrollLeft > 4);
    check();
    el.addEventListener("scroll", check, { passive: true });
    window.addEventListener("resize", check);
    return () => {
      el.removeEventListener("scroll", check);
      window.removeEventListener("resize", check);
    };
  });
  return more ? (
    <p class="scroll-cue small muted" data-testid="scroll-cue">
      {t("scrollSideways")} <span aria-hidden="true">→</span>
    </p>
  ) : null;
}

export function Credits() {
  const balance = useLoad(() => ok(api.GET("/credits")) as Promise<Balance>, []);
  const [page, setPage] = useState(1);
  const wrap = useRef<HTMLDivElement>(null);
  const ledger = useLoad(
    () => ok(api.GET("/credits/ledger", { params: { query: { page, limit: LIMIT } } })) as Promise<LedgerPage>,
    [page],
  );
  const b = balance.data;
  const pages = ledger.data ? Math.max(1, Math.ceil(ledger.data.total / LIMIT)) : 1;
  return (
    <Page title={t("credits")}>
      <ErrorBox error={balance.error} />
      <section class="panel" aria-labelledby="balance-h">
        <h2 id="balance-h">{t("balance")}</h2>
        {!b ? (
          <Loading />
        ) : (
          <>
            <p class="big">{b.unlimited ? t("unlimited") : t("creditsLeft", { n: b.credits, total: b.totalCredits })}</p>
            <p>
              {t("currentPlan")}: <strong>{t(("plan_" + b.plan) as Key)}</strong>
            </p>
            {b.reserved > 0 && <p class="muted">{tn("reserved", b.reserved)}</p>}
            {b.renewsAt && <p class="muted">{t("renews", { d: formatDate(b.renewsAt) })}</p>}
          </>
        )}
      </section>
      <Plans
        balance={b}
        onChanged={() => {
          balance.reload();
          ledger.reload();
        }}
      />
      <section aria-labelledby="ledger-h">
        <h2 id="ledger-h">{t("ledger")}</h2>
        <ErrorBox error={ledger.error} />
        {ledger.data && (
          <>
          <ScrollCue target={wrap} />
          <div class="table-wrap" tabIndex={0} role="region" aria-labelledby="ledger-h" ref={wrap}>
            <table>
              <thead>
                <tr>
                  <th scope="col">{t("colDate")}</th>
                  <th scope="col">{t("colType")}</th>
                  <th scope="col">{t("colAmount")}</th>
                  <th scope="col">{t("balance")}</th>
                  <th scope="col">{t("colNote")}</th>
                </tr>
              </thead>
              <tbody>
                {ledger.data.entries.map((e, i) => (
                  <tr key={i}>
                    <td>{formatDate(e.createdAt)}</td>
                    <td>{t(`ledger_${e.type}` as Key)}</td>
                    <td class="num">{["reserve", "charge"].includes(e.type) ? `−${e.amount}` : `+${e.amount}`}</td>
                    <td class="num">{e.balanceAfter}</td>
                    <td>
                      {e.projectId && e.projectTitle && (
                        <>
                          <a href={`/projects/${e.projectId}`}>{e.projectTitle}</a>
                          <br />
                        </>
                      )}
                      {e.note}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          </>
        )}
        {pages > 1 && (
          <nav class="pager" aria-label={t("ledger")}>
            <button type="button" class="secondary" disabled={page <= 1} onClick={() => setPage(page - 1)}>
              {t("previous")}
            </button>
            <span>{t("pageOf", { p: page, n: pages })}</span>
            <button type="button" class="secondary" disabled={page >= pages} onClick={() => setPage(page + 1)}>
              {t("next")}
            </button>
          </nav>
        )}
      </section>
    </Page>
  );
}
