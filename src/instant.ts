/**
 * Instants as the API and the CLI take them (the `start` and `end` of /v1/trades and of the
 * query_trades tool, and every time a CLI option takes): Unix milliseconds, an RFC 3339
 * date-time with its offset, or a date alone. One parser, so the CLI accepts what the API does.
 */

/** What parseInstant accepts, for error messages: "<name> must be " + INSTANT_FORMS. */
export const INSTANT_FORMS = "an RFC 3339 date-time or date, or Unix milliseconds";

// RFC 3339: a date-time with its offset, or a date alone (midnight UTC).
const DATE_TIME = /^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** Milliseconds since the epoch for an instant as `start` and `end` accept it, or NaN. */
export function parseInstant(text: string): number {
  if (/^\d{1,15}$/.test(text)) return Number(text);
  if (DATE.test(text)) return onCalendar(text) ? Date.parse(`${text}T00:00:00Z`) : Number.NaN;
  const m = DATE_TIME.exec(text);
  if (!m || !onCalendar(m[1]!)) return Number.NaN;
  const [, day, hh, mm, ss, fraction = "", offset] = m;
  // A leap second (:60) is the last instant of its minute: Date.parse has no second 60.
  const leap = ss === "60";
  const ms = Date.parse(
    `${day}T${hh}:${mm}:${leap ? "59" : ss}${fraction.slice(0, 4)}${offset!.toUpperCase()}`,
  );
  return leap ? ms + 999 : ms;
}

/** Date.parse rolls 2026-02-30 over into March: a date must name a day the calendar has. */
function onCalendar(date: string): boolean {
  const [year, month, day] = date.split("-").map(Number) as [number, number, number];
  const calendar = new Date(Date.UTC(year, month - 1, day));
  return calendar.getUTCMonth() === month - 1 && calendar.getUTCDate() === day;
}
