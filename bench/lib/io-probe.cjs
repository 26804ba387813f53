/**
 * Preloaded into `smartmoney import` by `npm run bench:bulk` (NODE_OPTIONS=--require): as the
 * process exits, writes what it did to the disk (/proc/self/io), its CPU time and its peak RSS
 * (VmHWM) as JSON to the file named by $SMARTMONEY_BENCH_IO_OUT. A parent cannot read a child's
 * /proc/PID/io once it has exited, and the last thing an import does (the WAL checkpoint on
 * close) is a large share of its writes. Preloading it into the built binary (rather than running
 * the CLI's source in a wrapper) measures exactly the build given to the bench, so an old build
 * and a new one can be compared turn about.
 *
 * A bulk command starts itself again in a sized heap (cli/sized-heap.ts), and the probe rides
 * along in NODE_OPTIONS: the first process to exit (the one that did the work) writes its
 * figures, and the one that waited for it adds its own: CPU time and peak RSS are the sum (both
 * were resident at once). The time is the longer, and so is the I/O: Linux adds a reaped child's
 * I/O to its parent's /proc/self/io.
 */
const { existsSync, readFileSync, writeFileSync } = require("node:fs");
const { performance } = require("node:perf_hooks");
const { isMainThread } = require("node:worker_threads");

const out = process.env.SMARTMONEY_BENCH_IO_OUT;
const started = performance.now();

function field(text, name) {
  const m = new RegExp(`^${name}:\\s+(\\d+)`, "m").exec(text);
  return m ? Number(m[1]) : Number.NaN;
}

process.on("exit", () => {
  // A worker thread loads it too (NODE_OPTIONS), and its figures are the whole process's.
  if (!out || !isMainThread) return;
  const io = readFileSync("/proc/self/io", "utf8");
  const status = readFileSync("/proc/self/status", "utf8");
  const cpu = process.cpuUsage();
  const mine = {
    seconds: (performance.now() - started) / 1000,
    // On a shared machine the wall clock counts other processes' turns; CPU time does not.
    cpuSeconds: (cpu.user + cpu.system) / 1e6,
    writeBytes: field(io, "write_bytes"),
    // What the process handed to write(2) and pwrite(2): SQLite's own writes. write_bytes is
    // what the kernel sends to the disk for it, whole page cache folios (bench/lib/copy.ts).
    writeCalls: field(io, "wchar"),
    readBytes: field(io, "read_bytes"),
    peakRssMb: field(status, "VmHWM") / 1024,
  };
  const before = existsSync(out) ? JSON.parse(readFileSync(out, "utf8")) : null;
  const figures = before
    ? Object.fromEntries(
        Object.entries(mine).map(([name, value]) => [
          name,
          name === "cpuSeconds" || name === "peakRssMb"
            ? value + before[name]
            : Math.max(value, before[name]),
        ]),
      )
    : mine;
  writeFileSync(out, JSON.stringify(figures));
});
