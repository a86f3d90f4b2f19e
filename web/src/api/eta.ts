// Time left, from the rates measured on this page: each stage's percent
// (and the overall percent) is noted with the time it was seen; the rate
// since the first value seen moving gives the time to 100 %. No estimate
// until a stage has moved at least MIN_STEP points over MIN_SECONDS.
const MIN_STEP = 2;
const MIN_SECONDS = 3;

type Seen = { t: number; v: number };

export class Eta {
  private first = new Map<string, Seen>();
  private last = new Map<string, Seen>();

  /** `v` (0–100) of `key` seen at `t` (ms). */
  note(key: string, v: number, t: number = Date.now()) {
    if (v <= 0 || v >= 100) {
      if (v >= 100) this.first.delete(key);
      return;
    }
    const first = this.first.get(key);
    // Went back (a retried stage): measure again from here.
    if (!first || v < (this.last.get(key)?.v ?? 0)) this.first.set(key, { t, v });
    this.last.set(key, { t, v });
  }

  /** Seconds left for `key` at the measured rate, or null (not moving yet,
   * done, or too little seen). */
  remaining(key: string): number | null {
    const a = this.first.get(key);
    const b = this.last.get(key);
    if (!a || !b) return null;
    const dv = b.v - a.v;
    const dt = (b.t - a.t) / 1000;
    if (dv < MIN_STEP || dt < MIN_SECONDS) return null;
    return ((100 - b.v) * dt) / dv;
  }
}
