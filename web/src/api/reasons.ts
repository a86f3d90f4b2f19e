// Why a clip was picked, in the console's language. The server's `reason`
// is one English sentence built from the clip's sub-scores and the prompt
// words it matched (actors/src/project/stages/reasons.rs); in another
// language the console builds the same sentence from `scores` and the
// words quoted in `reason`, by the same rule: the prompt match first, then
// the two strongest sub-scores of at least 60 (ties in the listed order),
// else the strongest one.
import { getLang, t, type Key } from "../i18n";

type Scores = { hook: number; completeness: number; emotion: number; pace: number; promptMatch?: number | null };

const STRONG = 60;
const FEATURES = ["hook", "completeness", "emotion", "pace"] as const;

function join(items: string[]): string {
  if (items.length <= 1) return items.join("");
  return `${items.slice(0, -1).join(", ")} ${t("reasonAnd")} ${items[items.length - 1]}`;
}

export function reasonText(reason: string, scores: Scores): string {
  if (getLang() === "en" || !reason) return reason;
  const matched = [...reason.matchAll(/\u201c([^\u201d]+)\u201d/g)].map((m) => m[1]).slice(0, 4);
  const parts: string[] = [];
  if (scores.promptMatch != null && matched.length > 0) {
    parts.push(t("reasonPrompt", { words: join(matched.map((w) => `\u201c${w}\u201d`)), n: scores.promptMatch }));
  }
  const strong = FEATURES.map((f) => [scores[f], f] as const)
    .filter(([v]) => v >= STRONG)
    .sort((a, b) => b[0] - a[0])
    .slice(0, 2);
  for (const [v, f] of strong) parts.push(t(`reason_${f}` as Key, { name: t(`score_${f}` as Key), n: v }));
  let sentence: string;
  if (parts.length === 0) {
    const [v, f] = FEATURES.map((x) => [scores[x], x] as const).reduce((best, x) => (x[0] > best[0] ? x : best), [0, "hook"] as const);
    sentence = t("reasonNone", { name: t(`score_${f}` as Key), n: v });
  } else {
    const s = join(parts);
    sentence = s.charAt(0).toUpperCase() + s.slice(1);
  }
  if (scores.promptMatch != null && matched.length === 0) sentence += t("reasonNoPrompt");
  return sentence + ".";
}
