// English and Portuguese. The language comes from the browser, a saved
// choice overrides it; `t` falls back to English for a missing key.
import { useEffect, useState } from "preact/hooks";

import { en, type Key } from "./i18n_en";
import { pt } from "./i18n_pt";

export type { Key };

export type Lang = "en" | "pt";
const KEY = "clipforge.lang";

function initial(): Lang {
  const saved = localStorage.getItem(KEY);
  if (saved === "en" || saved === "pt") return saved;
  return navigator.language.toLowerCase().startsWith("pt") ? "pt" : "en";
}

let lang: Lang = initial();
const listeners = new Set<() => void>();
document.documentElement.lang = lang === "pt" ? "pt-BR" : "en";

export function getLang(): Lang {
  return lang;
}

export function setLang(l: Lang) {
  lang = l;
  localStorage.setItem(KEY, l);
  document.documentElement.lang = l === "pt" ? "pt-BR" : "en";
  listeners.forEach((f) => f());
}

export function t(key: Key, params: Record<string, string | number> = {}): string {
  // A key the build does not know (a value newer than the console) shows as itself.
  const text = (lang === "pt" ? pt[key] : undefined) ?? en[key] ?? String(key);
  return text.replace(/\{(\w+)\}/g, (_, k: string) => String(params[k] ?? ""));
}

/** `key` for the count `n` (passed as `{n}`): its `_one` form where the
 * language's plural rules (Intl.PluralRules) say "one" — in Portuguese 0
 * and 1, in English only 1 — else the key itself. */
export function tn(key: Key, n: number, params: Record<string, string | number> = {}): string {
  const one = `${key}_one`;
  const rule = new Intl.PluralRules(lang === "pt" ? "pt-BR" : "en").select(n);
  return t(rule === "one" && one in en ? (one as Key) : key, { ...params, n });
}

/** Re-renders the caller when the language changes. */
export function useLang(): Lang {
  const [, set] = useState(0);
  useEffect(() => {
    const f = () => set((n) => n + 1);
    listeners.add(f);
    return () => listeners.delete(f);
  }, []);
  return lang;
}

export function formatDate(iso: string): string {
  const d = new Date(iso);
  return isNaN(d.getTime()) ? iso : d.toLocaleString(lang === "pt" ? "pt-BR" : "en");
}

/** A day (`YYYY-MM-DD` or an ISO time) in words: "28 November 2026",
 * "28 de novembro de 2026". */
export function formatDay(day: string): string {
  const d = new Date(day.length === 10 ? `${day}T12:00:00Z` : day);
  if (isNaN(d.getTime())) return day;
  return new Intl.DateTimeFormat(lang === "pt" ? "pt-BR" : "en-GB", { dateStyle: "long", timeZone: day.length === 10 ? "UTC" : undefined }).format(d);
}

/** An amount in a currency's smallest unit (Stripe's `unit_amount`). */
export function formatMoney(amount: number, currency: string): string {
  const f = new Intl.NumberFormat(lang === "pt" ? "pt-BR" : "en", { style: "currency", currency: currency.toUpperCase() });
  const digits = f.resolvedOptions().maximumFractionDigits ?? 2;
  return f.format(amount / 10 ** digits);
}

/** A size in bytes as GB or MB (binary units, as the plan table sets them). */
export function formatBytes(n: number): string {
  const gib = n / 1024 ** 3;
  const fmt = (v: number, unit: string) =>
    `${new Intl.NumberFormat(lang === "pt" ? "pt-BR" : "en", { maximumFractionDigits: 1 }).format(v)} ${unit}`;
  return gib >= 1 ? fmt(gib, "GB") : fmt(n / 1024 ** 2, "MB");
}
