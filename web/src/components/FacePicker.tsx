// The clip editor's face picker (issue 29): per shot of the current
// version, the source frame drawn as a box with the faces seen in it
// (GET …/faces); pick a face for the crop to follow in that shot, or a
// fixed position, or leave the shot automatic. The picks become the
// edit's `reframe` spans.
import { t } from "../i18n";

export type FaceBox = { atSec: number; x: number; y: number; w: number; h: number };
export type Faces = {
  width: number;
  height: number;
  layout: string;
  shots: { fromSec: number; toSec: number }[];
  faces: { id: number; spans: { fromSec: number; toSec: number }[]; boxes: FaceBox[] }[];
  reframe: { fromSec: number; toSec: number; x?: number | null; faceId?: number | null }[];
};
/** Per shot index: a face followed, or a fixed crop centre (source px). */
export type Picks = Record<number, { faceId: number } | { x: number }>;

export function FacePicker({ faces, picks, onPick }: { faces: Faces; picks: Picks; onPick: (p: Picks) => void }) {
  const { width, height } = faces;
  const set = (shot: number, v: Picks[number] | null) => {
    const next = { ...picks };
    if (v === null) delete next[shot];
    else next[shot] = v;
    onPick(next);
  };
  return (
    <div class="stack">
      {faces.reframe.length > 0 && <p class="small">{t("reframedSpans", { n: faces.reframe.length })}</p>}
      {faces.shots.map((shot, k) => {
        // The faces seen in this shot, each at its first box there.
        const seen = faces.faces
          .map((f) => ({ id: f.id, box: f.boxes.find((b) => b.atSec >= shot.fromSec - 1e-6 && b.atSec < shot.toSec) }))
          .filter((f): f is { id: number; box: FaceBox } => f.box !== undefined);
        const pick = picks[k];
        const name = `shot-${k}`;
        return (
          <fieldset key={k} class="shot" data-testid={`shot-${k}`}>
            <legend>{t("shotN", { n: k + 1, from: shot.fromSec.toFixed(1), to: shot.toSec.toFixed(1) })}</legend>
            <svg viewBox={`0 0 ${width} ${height}`} class="frame" aria-hidden="true">
              <rect x={0} y={0} width={width} height={height} class="frame-bg" />
              {seen.map((f) => (
                <g key={f.id} class={pick && "faceId" in pick && pick.faceId === f.id ? "face on" : "face"} onClick={() => set(k, { faceId: f.id })}>
                  <rect x={f.box.x} y={f.box.y} width={f.box.w} height={f.box.h} />
                  <text x={f.box.x + f.box.w / 2} y={f.box.y - 8} text-anchor="middle">{f.id + 1}</text>
                </g>
              ))}
              {pick && "x" in pick && <rect class="fixed-x" x={pick.x - 2} y={0} width={4} height={height} />}
            </svg>
            <div class="row" role="radiogroup" aria-label={t("shotN", { n: k + 1, from: shot.fromSec.toFixed(1), to: shot.toSec.toFixed(1) })}>
              <label class="inline">
                <input type="radio" name={name} checked={!pick} onChange={() => set(k, null)} /> {t("framingAuto")}
              </label>
              {seen.map((f) => (
                <label key={f.id} class="inline">
                  <input type="radio" name={name} checked={!!pick && "faceId" in pick && pick.faceId === f.id} onChange={() => set(k, { faceId: f.id })} />{" "}
                  {t("followFace", { n: f.id + 1 })}
                </label>
              ))}
              <label class="inline">
                <input type="radio" name={name} checked={!!pick && "x" in pick} onChange={() => set(k, { x: Math.round(width / 2) })} /> {t("fixedCrop")}
              </label>
            </div>
            {pick && "x" in pick && (
              <label>
                {t("cropCentre")}
                <input type="range" min={0} max={width} step={1} value={pick.x} onInput={(e) => set(k, { x: Number(e.currentTarget.value) })} />
              </label>
            )}
          </fieldset>
        );
      })}
      {faces.shots.length > 0 && faces.faces.length === 0 && <p class="small muted">{t("noFaces")}</p>}
    </div>
  );
}
