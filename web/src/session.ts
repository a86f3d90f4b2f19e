// The signed-in user, loaded once from /auth/get-session.
import { useEffect, useState } from "preact/hooks";
import { api, ok } from "./api/client";
import type { User } from "./api/models";

let user: User | null | undefined = undefined;
const listeners = new Set<() => void>();

export function setUser(u: User | null) {
  user = u;
  listeners.forEach((f) => f());
}

export async function loadSession() {
  try {
    const r = await api.GET("/auth/get-session");
    setUser(r.data ? r.data.user : null);
  } catch {
    setUser(null);
  }
}

export async function refreshUser() {
  try {
    const s = await ok(api.GET("/auth/get-session"));
    setUser(s.user);
  } catch {
    /* keep the current view */
  }
}

/** undefined while loading, null when signed out. */
export function useUser(): User | null | undefined {
  const [, set] = useState(0);
  useEffect(() => {
    const f = () => set((n) => n + 1);
    listeners.add(f);
    return () => listeners.delete(f);
  }, []);
  return user;
}
