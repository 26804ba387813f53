import pino, { type DestinationStream, type Logger } from "pino";
import type { LogLevel } from "./config";

export type Log = Logger;

/**
 * Structured JSON logs to stderr. Asynchronous destination so a log line per request does not
 * cost a write(2) per request; flushed on exit. Anything that looks like a credential is redacted
 * as a second line of defence: code must never log keys or secrets in the first place.
 */
export function createLog(level: LogLevel, destination?: DestinationStream): Log {
  // Asynchronous without a minimum length: a line goes out at once when idle, and under load the
  // lines written while one write is pending are coalesced into the next.
  const stream = destination ?? pino.destination({ dest: 2, sync: false });
  return pino(
    {
      level,
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: {
        paths: ["key", "secret", "authorization", "*.key", "*.secret", "*.authorization"],
        censor: "[redacted]",
      },
    },
    stream,
  );
}
