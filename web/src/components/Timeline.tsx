// The clip editor's timeline (issue 29): the sound's loudness over the
// stretch of source the clip can reach (GET …/waveform), the clip's range
// shaded between two handles. Drag a handle (mouse, touch, pen) or focus it
// and use the arrow keys (±0.1 s; Page Up/Down ±1 s); clicking the
// waveform moves the playhead there.
import { useRef } from "preact/hooks";
import { t } from "../i18n";

export type Waveform = { fromSec: number; stepSec: number; db: number[] };

const FLOOR_DB = -60;

export function Timeline({
  wave,
  start,
  end,
  playhead,
  onRange,
  onSeek,
}: {
  wave: Waveform;
  start: number;
  end: number;
  /** Seconds of the source at the playhead, or null. */
  playhead: number | null;
  onRange: (start: number, end: number) => void;
  onSeek: (sourceSec: number) => void;
}) {
  const box = useRef<SVGSVGElement>(null);
  const from = wave.fromSec;
  const to = wave.fromSec + wave.db.length * wave.stepSec;
  const span = Math.max(to - from, 0.1);
  const W = 1000;
  const H = 80;
  const x = (sec: number) => ((sec - from) / span) * W;
  const round = (v: number) => Math.round(v * 100) / 100;
  const clamp = (v: number) => Math.min(to, Math.max(from, v));
  // One bar per value, its height the loudness above the floor.
  const bars = wave.db
    .map((db, i) => {
      const h = Math.max(1, ((Math.max(db, FLOOR_DB) - FLOOR_DB) / -FLOOR_DB) * (H - 4));
      return `M${x(from + i * wave.stepSec).toFixed(1)} ${((H - h) / 2).toFixed(1)}v${h.toFixed(1)}`;
    })
    .join("");
  const secAt = (clientX: number) => {
    const r = box.current!.getBoundingClientRect();
    return clamp(from + ((clientX - r.left) / Math.max(r.width, 1)) * span);
  };
  const set = (which: "start" | "end", v: number) => {
    v = round(clamp(v));
    if (which === "start") onRange(Math.min(v, end - 0.1), end);
    else onRange(start, Math.max(v, start + 0.1));
  };
  const drag = (which: "start" | "end") => (e: PointerEvent) => {
    e.preventDefault();
    const el = e.currentTarget as Element;
    el.setPointerCapture(e.pointerId);
    const move = (m: PointerEvent) => set(which, secAt(m.clientX));
    const up = () => {
      el.removeEventListener("pointermove", move as EventListener);
      el.removeEventListener("pointerup", up);
    };
    el.addEventListener("pointermove", move as EventListener);
    el.addEventListener("pointerup", up);
  };
  const keys = (which: "start" | "end") => (e: KeyboardEvent) => {
    const v = which === "start" ? start : end;
    const d = { ArrowLeft: -0.1, ArrowDown: -0.1, ArrowRight: 0.1, ArrowUp: 0.1, PageDown: -1, PageUp: 1 }[e.key];
    if (d === undefined) return;
    e.preventDefault();
    set(which, v + d);
  };
  const handle = (which: "start" | "end", v: number) => (
    <g
      class="handle"
      role="slider"
      tabindex={0}
      aria-label={t(which === "start" ? "startHandle" : "endHandle")}
      aria-valuemin={round(from)}
      aria-valuemax={round(to)}
      aria-valuenow={round(v)}
      aria-valuetext={`${v.toFixed(1)} s`}
      data-testid={`handle-${which}`}
      onPointerDown={drag(which)}
      onKeyDown={keys(which)}
    >
      <rect x={x(v) - 14} y={0} width={28} height={H} fill="transparent" />
      <rect x={x(v) - 3} y={0} width={6} height={H} rx={2} />
    </g>
  );
  return (
    <div class="timeline">
      <svg
        ref={box}
        viewBox={`0 0 ${W} ${H}`}
        preserveAspectRatio="none"
        role="group"
        aria-label={t("timeline")}
        onClick={(e) => {
          if ((e.target as Element).closest(".handle")) return;
          onSeek(secAt(e.clientX));
        }}
      >
        <rect class="range" x={x(start)} y={0} width={Math.max(0, x(end) - x(start))} height={H} />
        <path class="wave" d={bars} />
        {playhead !== null && <rect class="playhead" x={x(playhead) - 1} y={0} width={2} height={H} />}
        {handle("start", start)}
        {handle("end", end)}
      </svg>
      <p class="small muted timeline-scale">
        <span>{from.toFixed(1)} s</span>
        <span>{t("timelineHint")}</span>
        <span>{to.toFixed(1)} s</span>
      </p>
    </div>
  );
}
