// Live project status over Server-Sent Events (EventSource resumes with
// Last-Event-ID by itself). Payloads are typed by models.ts.
import type { ClipEvent, EndEvent, ProgressEvent, RenderEvent } from "./models";

export interface StatusHandlers {
  progress(e: ProgressEvent): void;
  clip(e: ClipEvent): void;
  /** An edited clip's render (the clip editor). */
  render?(e: RenderEvent): void;
  end(kind: "completed" | "failed" | "cancelled", e: EndEvent): void;
}

/** Follows `/api/projects/{id}/status`; returns a function that stops it. */
export function followStatus(projectId: string, h: StatusHandlers): () => void {
  const es = new EventSource(`/api/projects/${encodeURIComponent(projectId)}/status`);
  const parse = <T,>(ev: Event): T => JSON.parse((ev as MessageEvent<string>).data) as T;
  es.addEventListener("progress", (ev) => h.progress(parse<ProgressEvent>(ev)));
  es.addEventListener("clip", (ev) => h.clip(parse<ClipEvent>(ev)));
  es.addEventListener("render", (ev) => h.render?.(parse<RenderEvent>(ev)));
  for (const kind of ["completed", "failed", "cancelled"] as const) {
    es.addEventListener(kind, (ev) => {
      es.close();
      h.end(kind, parse<EndEvent>(ev));
    });
  }
  return () => es.close();
}
