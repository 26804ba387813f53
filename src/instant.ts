/**
 * Instants as the API takes them (the `start` and `end` of /v1/trades and of the query_trades
 * tool): Unix milliseconds, an RFC 3339 date-time with its offset, or a date alone.
 */

// RFC 3339: a date-time with its offset, or a date alone (midnight UTC).
const DATE_TIME = /^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** Milliseconds since the epoch for an instant as `start` and `end` accept it, or NaN. */
export function parseInstant(text: string): number {
  if (/^\d{1,15}$/.test(text)) return Number(text);
  if (DATE.test(text)) return Date.parse(`${text}T00:00:00Z`);
  const m = DATE_TIME.exec(text);
  if (!m) return Number.NaN;
  const [, day, hh, mm, ss, fraction = "", offset] = m;
  // A leap second (:60) is the last instant of its minute: Date.parse has no second 60.
  const leap = ss === "60";
  const ms = Date.parse(
    `${day}T${hh}:${mm}:${leap ? "59" : ss}${fraction.slice(0, 4)}${offset!.toUpperCase()}`,
  );
  return leap ? ms + 999 : ms;
}
