import type { Result } from "../../result";
import type { HttpClient } from "./http";
import { type RateBucket, rateBucket } from "./limiter";

/**
 * Polymarket's public HTTP APIs, one method per request the ingester makes. Paging:
 * Gamma by offset/limit; the data API either by offset (a bare JSON array, the v1 shape) or by
 * cursor (the v2 envelope `{ data, pagination: { next_cursor, has_more } }`), whichever the
 * server answers with, so the same code follows both.
 */

export interface ApiUrls {
  dataUrl: string;
  gammaUrl: string;
  /** The data API's trades feed; "/trades" (v1, offset paging) or "/v2/trades" (cursor). */
  tradesPath: string;
}

/** Where the next trades page starts: an offset (v1) or an opaque cursor (v2). */
export type FeedCursor = { offset: number } | { cursor: string };

export interface FeedPage {
  items: unknown[];
  /** Null at the end of the feed. */
  next: FeedCursor | null;
}

/** Limits Polymarket publishes, per 10 seconds. */
export const PUBLISHED_LIMITS = {
  dataOverall: 1000,
  dataTrades: 200,
  gammaMarkets: 300,
} as const;

export interface PolymarketApi {
  /** Gamma markets in id order, from `offset`; `endDateMin` (ms) skips markets that ended before. */
  marketsPage(
    offset: number,
    limit: number,
    endDateMin: number | null,
    signal?: AbortSignal,
  ): Promise<Result<unknown[]>>;
  /**
   * Markets by condition id or by outcome token id. `closed` null leaves Gamma's default
   * filter; true asks for closed markets, which a default listing may leave out.
   */
  marketsByCondition(
    conditionIds: readonly string[],
    closed: boolean | null,
    signal?: AbortSignal,
  ): Promise<Result<unknown[]>>;
  marketsByToken(
    tokenIds: readonly string[],
    closed: boolean | null,
    signal?: AbortSignal,
  ): Promise<Result<unknown[]>>;
  /**
   * One page of Gamma's keyset event list (events embed their markets and tags). Every filter
   * is sent again with `after_cursor`: the cursor belongs to the query. Ordered by id, oldest
   * first, or newest first with `newestFirst` (Gamma's ids only grow: the newest events lead).
   */
  eventsKeysetPage(
    afterCursor: string | null,
    limit: number,
    query: { endDateMin: number | null; newestFirst?: boolean },
    signal?: AbortSignal,
  ): Promise<Result<KeysetPage>>;
  /** One page of the global trades feed, newest first (each match once, on its taker side). */
  tradesPage(
    from: FeedCursor | null,
    limit: number,
    signal?: AbortSignal,
  ): Promise<Result<FeedPage>>;
  /** All-time PnL leaderboard rows from `offset`. */
  leaderboardPage(offset: number, limit: number, signal?: AbortSignal): Promise<Result<unknown[]>>;
}

export interface KeysetPage {
  items: unknown[];
  /** Absent at the end of the list. */
  next: string | null;
}

export function createPolymarketApi(http: HttpClient, urls: ApiUrls): PolymarketApi {
  const data = rateBucket("data-api", PUBLISHED_LIMITS.dataOverall, 10_000);
  const trades = rateBucket("data-api /trades", PUBLISHED_LIMITS.dataTrades, 10_000);
  const gamma = rateBucket("gamma /markets", PUBLISHED_LIMITS.gammaMarkets, 10_000);
  const dataBase = urls.dataUrl.replace(/\/+$/, "");
  const gammaBase = urls.gammaUrl.replace(/\/+$/, "");

  const getList = async (
    url: string,
    buckets: RateBucket[],
    signal?: AbortSignal,
  ): Promise<Result<unknown[]>> => {
    const answer = await http.getJson(url, buckets, signal);
    if (!answer.ok) return answer;
    const list = listOf(answer.value);
    return list
      ? { ok: true, value: list }
      : { ok: false, reason: `${url}: the answer is not a list (${shapeOf(answer.value)})` };
  };

  const marketsQuery = (params: URLSearchParams, signal?: AbortSignal) =>
    getList(`${gammaBase}/markets?${params}`, [gamma], signal);

  return {
    marketsPage(offset, limit, endDateMin, signal) {
      const params = new URLSearchParams({
        limit: String(limit),
        offset: String(offset),
        order: "id",
        ascending: "true",
      });
      if (endDateMin !== null) params.set("end_date_min", new Date(endDateMin).toISOString());
      return marketsQuery(params, signal);
    },

    async eventsKeysetPage(afterCursor, limit, query, signal) {
      const params = new URLSearchParams({
        limit: String(limit),
        order: "id",
        ascending: query.newestFirst ? "false" : "true",
      });
      if (query.endDateMin !== null) {
        params.set("end_date_min", new Date(query.endDateMin).toISOString());
      }
      if (afterCursor !== null) params.set("after_cursor", afterCursor);
      const url = `${gammaBase}/events/keyset?${params}`;
      const answer = await http.getJson(url, [gamma], signal);
      if (!answer.ok) return answer;
      const body = answer.value as { events?: unknown; next_cursor?: unknown } | null;
      if (!body || !Array.isArray(body.events)) {
        return { ok: false, reason: `${url}: not a keyset page (${shapeOf(answer.value)})` };
      }
      const next =
        typeof body.next_cursor === "string" && body.next_cursor !== "" ? body.next_cursor : null;
      return { ok: true, value: { items: body.events, next } };
    },

    marketsByCondition(conditionIds, closed, signal) {
      const params = new URLSearchParams({ limit: String(conditionIds.length) });
      for (const id of conditionIds) params.append("condition_ids", id);
      if (closed !== null) params.set("closed", String(closed));
      return marketsQuery(params, signal);
    },

    marketsByToken(tokenIds, closed, signal) {
      const params = new URLSearchParams({ limit: String(tokenIds.length) });
      for (const id of tokenIds) params.append("clob_token_ids", id);
      if (closed !== null) params.set("closed", String(closed));
      return marketsQuery(params, signal);
    },

    async tradesPage(from, limit, signal) {
      const params = new URLSearchParams();
      if (from && "cursor" in from) {
        // A v2 cursor carries its own page size, and the v2 feed refuses an offset.
        params.set("cursor", from.cursor);
      } else {
        params.set("limit", String(limit));
        if (from) params.set("offset", String(from.offset));
      }
      const url = `${dataBase}${urls.tradesPath}?${params}`;
      const answer = await http.getJson(url, [data, trades], signal);
      if (!answer.ok) return answer;
      const offset = from && "offset" in from ? from.offset : 0;
      return feedPage(answer.value, offset, limit, url);
    },

    leaderboardPage(offset, limit, signal) {
      const params = new URLSearchParams({
        timePeriod: "ALL",
        orderBy: "PNL",
        limit: String(limit),
        offset: String(offset),
      });
      return getList(`${dataBase}/v1/leaderboard?${params}`, [data], signal);
    },
  };
}

/** Reads either paging style. */
export function feedPage(
  body: unknown,
  offset: number,
  limit: number,
  url: string,
): Result<FeedPage> {
  if (Array.isArray(body)) {
    // v1: a short page is the last one.
    const next = body.length < limit ? null : { offset: offset + body.length };
    return { ok: true, value: { items: body, next } };
  }
  const envelope = body as {
    data?: unknown;
    pagination?: { next_cursor?: unknown; has_more?: unknown };
    next_cursor?: unknown;
    has_more?: unknown;
  } | null;
  if (envelope && Array.isArray(envelope.data)) {
    const paging = envelope.pagination ?? envelope;
    const cursor = typeof paging.next_cursor === "string" ? paging.next_cursor : null;
    const next = paging.has_more === true && cursor ? { cursor } : null;
    return { ok: true, value: { items: envelope.data, next } };
  }
  return { ok: false, reason: `${url}: not a trades page (${shapeOf(body)})` };
}

function listOf(body: unknown): unknown[] | null {
  if (Array.isArray(body)) return body;
  const data = (body as { data?: unknown } | null)?.data;
  return Array.isArray(data) ? data : null;
}

function shapeOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object")
    return `an object with ${Object.keys(value).slice(0, 5).join(", ")}`;
  return typeof value;
}
