// The API client, generated from openapi/openapi.json (`npm run gen`):
// paths, parameters and bodies are checked against the document.
import createClient from "openapi-fetch";
import type { components, paths } from "./schema";

export type ErrorBody = components["schemas"]["ErrorBody"];

/** Same origin: the session is the HttpOnly `clipforge.session_token` cookie. */
export const api = createClient<paths>({ baseUrl: "/api", credentials: "same-origin" });

/** An API error with the uniform body `{error, message}` and its status. */
export class ApiFailure extends Error {
  constructor(
    public status: number,
    public code: string,
    message: string,
  ) {
    super(message);
  }
}

function isErrorBody(v: unknown): v is ErrorBody {
  return typeof v === "object" && v !== null && "error" in v && "message" in v;
}

/** Unwraps an openapi-fetch result: the data, or throws an ApiFailure. */
export async function ok<T>(
  pending: Promise<{ data?: T; error?: unknown; response: Response }>,
): Promise<T> {
  let r;
  try {
    r = await pending;
  } catch {
    throw new ApiFailure(0, "network", "");
  }
  if (r.error !== undefined || !r.response.ok) {
    const e = r.error;
    if (isErrorBody(e)) throw new ApiFailure(r.response.status, e.error, e.message);
    throw new ApiFailure(r.response.status, "http_" + r.response.status, r.response.statusText);
  }
  return r.data as T;
}
