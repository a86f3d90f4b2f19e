// Failures on the page: a sentence the person can act on (api/errors.ts),
// announced (role="alert" is an assertive live region), brought into view,
// and the server's own words only behind a "Details" toggle. A refused
// field's error sits under that field (FieldError), which is marked
// invalid, described by the error and focused; typing in it clears it.
import type { Ref } from "preact";
import { useEffect, useId, useRef, useState } from "preact/hooks";
import { explain, type ErrorContext, type Explained } from "../api/errors";
import { t } from "../i18n";

function Said({ x, id, inner }: { x: Explained; id?: string; inner?: Ref<HTMLDivElement> }) {
  return (
    <div class="error" role="alert" id={id} ref={inner}>
      <p>{x.text}</p>
      {x.raw && x.raw !== x.text && (
        <details>
          <summary>{t("errDetails")}</summary>
          <code>{x.raw}</code>
        </details>
      )}
    </div>
  );
}

/** The failure of a page or a form. `fields`: the fields whose errors a
 * FieldError of the same form shows instead. */
export function ErrorBox({ error, ctx, fields }: { error: unknown; ctx?: ErrorContext; fields?: string[] }) {
  const ref = useRef<HTMLDivElement>(null);
  const x = error ? explain(error, ctx) : null;
  const shown = !!x && !(x.field && fields?.includes(x.field));
  useEffect(() => {
    if (shown) ref.current?.scrollIntoView?.({ block: "nearest" });
  }, [error]);
  if (!x || !shown) return null;
  return <Said x={x} inner={ref} />;
}

/** The failure of one field, placed right after it. `field` is the name the
 * API gives the field (and the `name` attribute of its control in the form);
 * `also`: other names the API gives it (the same link is `url` to one
 * operation and `sourceUrl` to another). */
export function FieldError({ error, field, also, ctx }: { error: unknown; field: string; also?: string[]; ctx?: ErrorContext }) {
  const id = useId();
  const ref = useRef<HTMLDivElement>(null);
  const [cleared, setCleared] = useState<unknown>(null);
  const x = error ? explain(error, ctx) : null;
  const mine = !!x && !!x.field && (x.field === field || !!also?.includes(x.field)) && cleared !== error;
  useEffect(() => {
    if (!mine) return;
    const control = ref.current?.closest("form, section")?.querySelector<HTMLElement>(`[name="${field}"]`);
    if (!control) return;
    const described = control.getAttribute("aria-describedby");
    control.setAttribute("aria-invalid", "true");
    control.setAttribute("aria-describedby", described ? `${described} ${id}` : id);
    control.focus();
    control.scrollIntoView?.({ block: "center" });
    const clear = () => setCleared(error);
    control.addEventListener("input", clear, { once: true });
    return () => {
      control.removeEventListener("input", clear);
      control.removeAttribute("aria-invalid");
      if (described) control.setAttribute("aria-describedby", described);
      else control.removeAttribute("aria-describedby");
    };
  }, [mine, error]);
  if (!x || !mine) return null;
  return <Said x={x} id={id} inner={ref} />;
}
