/**
 * The console's only way to the data: the public /v1 API with the signed-in key, exactly as a
 * customer's code would call it, so tiers, rate limits and caps apply unchanged.
 */
export interface RateLimit {
  limit: number;
  remaining: number;
  /** Unix seconds when the window next frees a call. */
  reset: number;
}

export interface Freshness {
  asOf: string;
  ageSeconds: number;
}

export type Answer<T> =
  | { ok: true; status: number; body: T; headers: Headers }
  | {
      ok: false;
      status: number;
      code: string;
      message: string;
      /** From a 403's message ("needs the terminal tier"): the tier the operation needs. */
      tierNeeded: string | null;
      retryAfter: number | null;
    };

interface ErrorEnvelope {
  error?: { code?: string; message?: string };
}

export class Api {
  rateLimit: RateLimit | null = null;
  freshness: Freshness | null = null;
  private readonly listeners = new Set<() => void>();

  constructor(private readonly key: string) {}

  /** Called after every answer that changed the rate-limit or freshness figures. */
  onChange(listener: () => void): void {
    this.listeners.add(listener);
  }

  get<T>(path: string, query: Record<string, string | number | boolean | null | undefined> = {}) {
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(query)) {
      if (value !== null && value !== undefined && value !== "") params.set(name, String(value));
    }
    const search = params.toString();
    return this.call<T>("GET", search ? `${path}?${search}` : path);
  }

  async call<T>(method: string, path: string, body?: unknown): Promise<Answer<T>> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.key}` };
    if (body !== undefined) headers["content-type"] = "application/json";
    let res: Response;
    try {
      res = await fetch(path, {
        method,
        headers,
        body: body === undefined ? null : JSON.stringify(body),
      });
    } catch (error) {
      return {
        ok: false,
        status: 0,
        code: "network",
        message: `the server did not answer (${(error as Error).message})`,
        tierNeeded: null,
        retryAfter: null,
      };
    }
    this.note(res.headers);
    const text = await res.text();
    let parsed: unknown = null;
    try {
      parsed = text === "" ? null : JSON.parse(text);
    } catch {
      parsed = null;
    }
    if (res.ok) return { ok: true, status: res.status, body: parsed as T, headers: res.headers };
    const error = (parsed as ErrorEnvelope | null)?.error;
    const message = error?.message ?? `HTTP ${res.status}`;
    const tier = res.status === 403 ? /needs the (\w+) tier/.exec(message)?.[1] : undefined;
    const retry = res.headers.get("retry-after");
    return {
      ok: false,
      status: res.status,
      code: error?.code ?? "http_error",
      message,
      tierNeeded: tier ?? null,
      retryAfter: retry === null ? null : Number(retry),
    };
  }

  private note(headers: Headers): void {
    let changed = false;
    const limit = headers.get("x-ratelimit-limit");
    const remaining = headers.get("x-ratelimit-remaining");
    const reset = headers.get("x-ratelimit-reset");
    if (limit !== null && remaining !== null && reset !== null) {
      this.rateLimit = { limit: Number(limit), remaining: Number(remaining), reset: Number(reset) };
      changed = true;
    }
    const asOf = headers.get("x-read-model-as-of");
    const age = headers.get("x-read-model-age");
    if (asOf !== null && age !== null) {
      this.freshness = { asOf, ageSeconds: Number(age) };
      changed = true;
    }
    if (changed) for (const listener of this.listeners) listener();
  }
}
