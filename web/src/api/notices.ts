// A notification worded in the console's language from its type and the
// values the server names (`params`); one without them (written before
// params existed, or of a type this console does not know) shows the
// server's English title and message.
import { formatDay, t, tn, type Key } from "../i18n";
import type { Notification } from "./models";

type Params = Record<string, string>;
type Worded = { title: string; message: string };

/** The message's key and count (for the plural form) of each type, and the
 * params it needs. */
const WORDING: Record<string, { needs: string[]; count?: string }> = {
  project_completed: { needs: ["projectTitle", "clips"], count: "clips" },
  project_failed: { needs: ["projectTitle", "error"] },
  post_published: { needs: ["postTitle", "platform"] },
  post_failed: { needs: ["postTitle", "platform", "error"] },
  plan_changed: { needs: ["plan"] },
  credits_low: { needs: ["available", "total", "renews"], count: "available" },
  payment_failed: { needs: ["plan"] },
  webhook_disabled: { needs: ["url"] },
  clip_rendered: { needs: ["version", "clipTitle"] },
};

export function worded(n: Notification): Worded {
  const p: Params = { ...n.params };
  const w = WORDING[n.type];
  if (!w || !w.needs.every((k) => p[k] !== undefined)) return { title: n.title, message: n.message };
  for (const d of ["renews", "retryOn"]) if (p[d]) p[d] = formatDay(p[d]);
  if (p.plan) p.plan = t(`plan_${p.plan}` as Key);
  let key = `n_${n.type}_msg`;
  if (n.type === "plan_changed" && p.credits === undefined) key = "n_plan_changed_unlimited_msg";
  if (n.type === "payment_failed" && p.retryOn) key = "n_payment_failed_retry_msg";
  const title = t(`n_${n.type}` as Key);
  const message = w.count ? tn(key as Key, Number(p[w.count]), p) : t(key as Key, p);
  return { title, message };
}
