import type { Cursors, CursorValue } from "./cursor";

export interface Page<T> {
  data: T[];
  next_cursor: string | null;
}

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
