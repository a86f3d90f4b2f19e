import { useEffect, useState } from "preact/hooks";
import { api, ApiFailure, ok } from "../api/client";
import type { Balance, PlanInfo } from "../api/models";
import { Choice, ErrorBox, useLoad } from "../components/ui";
import { formatBytes, formatDate, formatMoney, t, type Key } from "../i18n";
import { navigate } from "../router";

const PLANS = ["free", "creator", "pro", "enterprise"] as const;
type Plan = (typeof PLANS)[number];
const planName = (p: string) => t(("plan_" + p) as Key);

/**
 * The plans and how to change them: `select-plan` first (free always; a
 * paid plan the account is entitled to switches at once); a creator or pro
 * plan not bought yet opens Stripe's checkout, whose return path
 * (`/credits?session_id=…`) activates it. The portal manages a subscription.
 * Free with a live subscription takes effect at the end of the paid period
 * (`changesAt`, then the balance's `planEndsAt`); until then the current
 * card offers to keep the paid plan (`select-plan` with it again).
 */
export function Plans({ balance, onChanged }: { balance: Balance | undefined; onChanged: () => void }) {
  const [frequency, setFrequency] = useState<"monthly" | "yearly">("monthly");
  const [error, setError] = useState<unknown>(null);
  const [note, setNote] = useState("");
  const [busy, setBusy] = useState(false);
  const [billingOff, setBillingOff] = useState(false);
  // What each plan gives and costs, from the table the server enforces.
  const table = useLoad(() => ok(api.GET("/plans")), []);
  const info = (p: Plan) => table.data?.plans.find((x) => x.id === p);

  // Back from Stripe's checkout: activate the session and say how it went.
  useEffect(() => {
    const sessionId = new URLSearchParams(location.search).get("session_id");
    if (!sessionId) return;
    navigate("/credits", true);
    ok(api.GET("/stripe/checkout/{session_id}", { params: { path: { session_id: sessionId } } })).then(
      (s) => {
        setNote(s.activated ? t("checkoutPaid", { p: planName(s.plan) }) : t("checkoutOpen"));
        onChanged();
      },
      setError,
    );
  }, []);

  async function act(f: () => Promise<void>) {
    setError(null);
    setNote("");
    setBusy(true);
    try {
      await f();
    } catch (e) {
      if (e instanceof ApiFailure && e.status === 503) setBillingOff(true);
      else setError(e);
    } finally {
      setBusy(false);
    }
  }
  // The paid plan is set to end (free was chosen): when.
  const ending = balance?.planEndsAt ?? null;
  const openStripe = async (page: Promise<{ url: string }>) => location.assign((await page).url);
  const choose = (plan: Plan) =>
    act(async () => {
      try {
        const r = await ok(api.POST("/credits/select-plan", { body: { plan } }));
        if (r.changesAt) setNote(t("planEnding", { p: planName(r.plan), d: formatDate(r.changesAt) }));
        else if (ending && plan === balance?.plan) setNote(t("planKept", { p: planName(r.plan) }));
        else setNote(t("planNow", { p: planName(r.plan) }));
        onChanged();
      } catch (e) {
        const buy = e instanceof ApiFailure && e.code === "checkout_required" && (plan === "creator" || plan === "pro");
        if (!buy) throw e;
        await openStripe(ok(api.POST("/stripe/checkout", { body: { plan, frequency } })));
      }
    });
  const portal = () => act(() => openStripe(ok(api.POST("/stripe/customer-portal"))));

  return (
    <section class="panel" aria-labelledby="plans-h">
      <h2 id="plans-h">{t("plans")}</h2>
      <ErrorBox error={error} />
      {billingOff && (
        <p role="alert" class="notice">
          {t("billingOff")}
        </p>
      )}
      {note && (
        <p role="status" class="ok">
          {note}
        </p>
      )}
      <Choice
        legend={t("billingPeriod")}
        name="freq"
        value={frequency}
        onChange={setFrequency}
        options={[
          ["monthly", t("monthly")],
          ["yearly", t("yearly")],
        ]}
      />
      <ul class="plans">
        {PLANS.map((p) => {
          const current = balance?.plan === p;
          return (
            <li key={p} class={current ? "plan current" : "plan"} aria-current={current ? "true" : undefined}>
              <h3>{planName(p)}</h3>
              <p class="small">{t(("planDesc_" + p) as Key)}</p>
              {info(p) && <PlanFacts plan={info(p)!} frequency={frequency} />}
              {current ? (
                <>
                  <p class="badge-soft">{t("currentPlan")}</p>
                  {ending && (
                    <>
                      <p class="small">{t("planEndsOn", { d: formatDate(ending) })}</p>
                      <button type="button" disabled={busy} onClick={() => choose(p)}>
                        {t("keepPlan", { p: planName(p) })}
                      </button>
                    </>
                  )}
                </>
              ) : ending && p === "free" ? (
                <p class="badge-soft">{t("freeFrom", { d: formatDate(ending) })}</p>
              ) : (
                <button type="button" class={p === "free" || p === "enterprise" ? "secondary" : undefined} disabled={!balance || busy} onClick={() => choose(p)}>
                  {t("buy", { p: planName(p) })}
                </button>
              )}
            </li>
          );
        })}
      </ul>
      <p class="muted small">{t("paidHint")}</p>
      <button type="button" class="secondary" disabled={busy} onClick={portal}>
        {t("portal")}
      </button>
    </section>
  );
}

/** A plan's price at the chosen frequency and what it gives. */
function PlanFacts({ plan, frequency }: { plan: PlanInfo; frequency: "monthly" | "yearly" }) {
  const price = plan.prices.find((x) => x.frequency === frequency);
  const priceText = price
    ? t(frequency === "monthly" ? "planPerMonth" : "planPerYear", { p: formatMoney(price.amount, price.currency) })
    : plan.id === "free"
      ? t("planPriceFree")
      : plan.id === "enterprise"
        ? t("planPriceSales")
        : null;
  return (
    <>
      {priceText && (
        <p class="plan-price" data-testid={`price-${plan.id}`}>
          {priceText}
        </p>
      )}
      <ul class="plan-facts small" data-testid={`facts-${plan.id}`}>
        <li>{plan.monthlyCredits == null ? t("planUnlimited") : t("planCredits", { n: plan.monthlyCredits })}</li>
        {plan.welcomeBonus > 0 && <li>{t("planBonus", { n: plan.welcomeBonus })}</li>}
        <li>{t("planUpload", { s: formatBytes(plan.uploadMaxBytes) })}</li>
        <li>{t("planStorage", { s: formatBytes(plan.storageBytes) })}</li>
        <li>{plan.watermark ? t("planWatermark") : t("planNoWatermark")}</li>
      </ul>
    </>
  );
}

