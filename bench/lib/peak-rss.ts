import { readFileSync } from "node:fs";

/**
 * This process's peak resident memory, MB. Linux's VmHWM is the high-water mark of the process's
 * own memory since it started running its program. getrusage's maxRSS is not: Linux carries it
 * across exec, so a benchmark child spawned by a parent that once used 1.4 GB reports at least
 * 1.4 GB whatever it did itself. Elsewhere, maxRSS is the best there is.
 */
export function peakRssMb(): number {
  try {
    const kb = /VmHWM:\s+(\d+)\s+kB/.exec(readFileSync("/proc/self/status", "utf8"))?.[1];
    if (kb !== undefined) return Number(kb) / 1024;
  } catch {
    // Not Linux: fall through.
  }
  return process.resourceUsage().maxRSS / 1024;
}
