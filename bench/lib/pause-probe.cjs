/**
 * Preloaded into the server by `npm run bench:stall -- --trace-gc` (NODE_OPTIONS=--require):
 * says what each pause of the server's event loop was made of.
 *
 * - V8's --trace-gc, turned on from inside: NODE_OPTIONS refuses it (it is not on Node's list of
 *   V8 flags it passes on) and the binary takes no Node flags of its own. One line per GC with its
 *   main-thread pause.
 * - A 10 ms timer that, whenever it fires more than 20 ms late, prints how the gap was spent by
 *   this thread: on a CPU (process.threadCpuUsage: the server's own work, GC included), waiting
 *   for one (the kernel's run-queue wait, /proc/thread-self/schedstat: another process had the
 *   core), or neither (blocked: a page fault on the mapped database, an fsync, a lock). A loop
 *   pause that the server's CPU time does not cover is the machine's, not the server's.
 *
 * Its own cost is a timer callback and one small /proc read every 10 ms.
 */
const { readFileSync } = require("node:fs");
const { performance } = require("node:perf_hooks");

require("node:v8").setFlagsFromString("--trace-gc");

const PERIOD_MS = 10;
const LATE_MS = 20;

/** ms this thread has waited for a CPU; null where there is no schedstat. */
function waited() {
  try {
    return Number(readFileSync("/proc/thread-self/schedstat", "utf8").split(" ")[1]) / 1e6;
  } catch {
    return null;
  }
}

const cpuMs = () => {
  const { user, system } = process.threadCpuUsage();
  return (user + system) / 1000;
};

let lastWall = performance.now();
let lastCpu = cpuMs();
let lastWait = waited();
setInterval(() => {
  const wall = performance.now();
  const gap = wall - lastWall;
  if (gap - PERIOD_MS > LATE_MS) {
    const cpu = cpuMs() - lastCpu;
    const wait = lastWait === null ? null : waited() - lastWait;
    const blocked = wait === null ? null : gap - cpu - wait;
    const f = (value) => (value === null ? "?" : value.toFixed(1));
    process.stdout.write(
      `pause-probe: gap ${f(gap)} ms, on cpu ${f(cpu)} ms, waiting for a cpu ${f(wait)} ms, blocked ${f(blocked)} ms\n`,
    );
  }
  lastWall = performance.now();
  lastCpu = cpuMs();
  lastWait = waited();
}, PERIOD_MS).unref();
