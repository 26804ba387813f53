import type * as v from "valibot";
import { badRequest } from "../errors";
import type { PageOf } from "../schemas/shared";
import type { Cursors, CursorValue } from "./cursor";

/**
 * Paging rules shared by REST and MCP: a page of rows with its opaque cursor, and the depths
 * past which lists are not served (docs/api.md, Pages).
 */

/** A page of rows: the shape PageOf (src/schemas/shared.ts) declares, for rows of type T. */
export type Page<T> = v.InferOutput<ReturnType<typeof PageOf<v.GenericSchema<unknown, T>>>>;

/** Wraps one page of rows; the cursor carries the keyset of the last row when more follow. */
export function toPage<T>(
  cursors: Cursors,
  endpoint: string,
  rows: T[],
  more: boolean,
  keyOf: (last: T) => CursorValue[],
): Page<T> {
  const last = rows.at(-1);
  return {
    data: rows,
    next_cursor: more && last !== undefined ? cursors.encode(endpoint, keyOf(last)) : null,
  };
}

/** Leaderboards page to a depth of 500 rows for every tier that may call them (docs/api.md, Pages). */
export const LEADERBOARD_DEPTH = 500;

/**
 * A keyset page of a list served only to a fixed depth. The cursor carries the last row's key and
 * how many rows came before it; the page that reaches the depth ends there with next_cursor null.
 */
export function depthCappedPage<T, K extends CursorValue[]>(
  cursors: Cursors,
  endpoint: string,
  cursor: string | undefined,
  keyArity: number,
  limit: number,
  depth: number,
  fetch: (limit: number, after: K | undefined) => { rows: T[]; keys: K[]; more: boolean },
): Page<T> {
  let after: K | undefined;
  let served = 0;
  if (cursor !== undefined) {
    const values = cursors.decode(endpoint, cursor, keyArity + 1);
    const count = values[keyArity];
    // Only this server mints cursors, so this guards against our own mistakes, not forgeries.
    if (typeof count !== "number" || !Number.isInteger(count) || count < 1 || count >= depth) {
      throw badRequest(
        "cursor is invalid: pass next_cursor from this endpoint's previous page unchanged",
      );
    }
    served = count;
    after = values.slice(0, keyArity) as K;
  }
  const { rows, keys, more } = fetch(Math.min(limit, depth - served), after);
  const total = served + rows.length;
  const last = keys.at(-1);
  return {
    data: rows,
    next_cursor:
      more && total < depth && last !== undefined
        ? cursors.encode(endpoint, [...last, total])
        : null,
  };
}

/** The edge screener's page depth in rows (docs/api.md, Pages). */
export const SCREEN_DEPTH = 1_000;
