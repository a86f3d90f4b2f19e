// What an API failure means for the person in front of the console: the
// error body's code (and, for a refused field, the field's name, which the
// server puts first in the message: "scheduledAt: is in the past") map to
// a short sentence in the console's language. The server's own message is
// kept as `raw`, shown only behind a details toggle.
import { t, type Key } from "../i18n";
import { ApiFailure } from "./client";

/** What was being sent: a 413/415 of an avatar is about an image, of an
 * upload about a video; a password change's wrong credentials are its
 * current password. */
export type ErrorContext = "video" | "image" | "passwordChange";

export type Explained = {
  /** The sentence to show. */
  text: string;
  /** The request field it concerns (the body's field name), if any. */
  field?: string;
  /** The server's message, for the details toggle. */
  raw?: string;
};

// Codes whose meaning does not depend on the field or the message.
const BY_CODE: Record<string, Key> = {
  invalid_credentials: "e_invalid_credentials",
  unauthorized: "e_unauthorized",
  forbidden: "e_forbidden",
  not_found: "e_not_found",
  rate_limited: "e_rate_limited",
  storage_quota_exceeded: "e_storage_quota_exceeded",
  video_unavailable: "e_video_unavailable",
  source_unreachable: "e_source_unreachable",
  source_timeout: "e_source_unreachable",
  source_unavailable: "e_source_unreachable",
  invalid_video: "e_invalid_video",
  provider_not_configured: "e_provider_not_configured",
  billing_not_configured: "e_billing_not_configured",
  checkout_required: "e_checkout_required",
  subscription_active: "e_subscription_active",
  no_billing_account: "e_no_billing_account",
  integration_required: "e_integration_required",
  not_editable: "e_not_editable",
  no_clips: "e_no_clips",
  faces_not_analysed: "e_faces_not_analysed",
  webhook_backlog: "e_webhook_backlog",
  private_target: "e_private_target",
  internal_error: "e_internal",
  unavailable: "e_unavailable",
};

// A refused field's reason, as the server or the request parser words it,
// and the sentence for it ({n}: the number in the reason).
const REASONS: [RegExp, Key][] = [
  [/at least (\d+) characters|minLength\((\d+)\)/, "e_tooShort"],
  [/at most (\d+) characters|maxLength\((\d+)\)|longer than (\d+) characters/, "e_tooLong"],
  [/^must be 1 to (\d+) characters/, "e_nameLength"],
  [/valid email/, "e_email"],
  [/in the past/, "e_past"],
  [/365 days/, "e_tooFar"],
  [/control|bidi/, "e_controlChars"],
  [/private|loopback|link-local/, "e_private_target"],
  [/not supported|unsupported|youtube|vimeo/i, "e_unsupportedSite"],
  [/url|http/i, "e_url"],
  [/empty|required|missing/, "e_required"],
];

// Field names as the console labels them (the label's key).
const FIELD_LABELS: Record<string, Key> = {
  email: "email",
  password: "password",
  newPassword: "newPassword",
  currentPassword: "currentPassword",
  name: "name",
  scheduledAt: "when",
  sourceUrl: "videoUrl",
  url: "webhookUrl",
};

export function fieldLabel(field: string): string {
  const key = FIELD_LABELS[field];
  return key ? t(key) : field;
}

/** The field a message names: "field: reason" (the server's form) or
 * "... field `name` ..." (the request parser's). */
function fieldOf(message: string): { field?: string; reason: string } {
  const parsed = /field `([A-Za-z][\w.]*)`/.exec(message);
  if (parsed) return { field: parsed[1], reason: message };
  const named = /^([A-Za-z][\w.[\]]*): (.*)$/s.exec(message);
  if (named) return { field: named[1], reason: named[2] };
  return { reason: message };
}

function reasonText(reason: string): string | undefined {
  for (const [re, key] of REASONS) {
    const m = re.exec(reason);
    if (m) return t(key, { n: m.slice(1).find((x) => x !== undefined) ?? "" });
  }
  return undefined;
}

/** A failure said for people: a sentence, the field it concerns, the raw text. */
export function explain(e: unknown, ctx: ErrorContext = "video"): Explained {
  if (!(e instanceof ApiFailure)) return { text: t("errGeneric") };
  const raw = e.message || undefined;
  if (e.status === 0) return { text: t("errNetwork") };
  if (e.code === "invalid_credentials" && ctx === "passwordChange") return { text: t("e_currentPassword"), field: "currentPassword", raw };
  if (e.code === "insufficient_credits") {
    const m = /(\d+) needed, (\d+) available/.exec(e.message);
    return { text: m ? t("e_credits", { needed: m[1], available: m[2] }) : t("err402"), raw };
  }
  if (e.status === 413 && e.code !== "storage_quota_exceeded") return { text: t(ctx === "image" ? "e_imageTooLarge" : "err413"), raw };
  if (e.status === 415) return { text: t(ctx === "image" ? "e_imageType" : "err415"), raw };
  if (e.code === "rate_limited") {
    const m = /(\d+) s/.exec(e.message);
    return { text: m ? t("e_rateLimitedIn", { n: m[1] }) : t("e_rate_limited"), raw };
  }
  if (e.status === 400 || e.status === 402 || e.status === 409) {
    const { field, reason } = fieldOf(e.message);
    if (field === "plan" && /sales|self-service/.test(reason)) return { text: t("e_salesPlan"), field, raw };
    if (field) return { text: reasonText(reason) ?? t("e_field"), field, raw };
  }
  const key = BY_CODE[e.code];
  if (key) return { text: t(key), raw };
  if (e.status >= 500) return { text: t("e_internal"), raw };
  // A refusal the console has no sentence for: the server's own words.
  return { text: e.message || t("errGeneric"), raw: undefined };
}
