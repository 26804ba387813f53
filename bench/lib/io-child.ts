/**
 * Runs one smartmoney CLI command in this process and, as it exits, writes what the process did
 * to the disk (/proc/self/io), its CPU time and its peak RSS (VmHWM) as JSON to the file named by
 * $SMARTMONEY_BENCH_IO_OUT. A parent cannot read a child's /proc/PID/io once it has exited, and
 * the last thing an import does (the WAL checkpoint on close) is a large share of its writes.
 *
 *   SMARTMONEY_BENCH_IO_OUT=out.json npx tsx bench/lib/io-child.ts import FILE --db DB
 */
import { readFileSync, writeFileSync } from "node:fs";
import { main } from "../../cli/program";

const out = process.env.SMARTMONEY_BENCH_IO_OUT;
const started = performance.now();

function field(text: string, name: string): number {
  const m = new RegExp(`^${name}:\\s+(\\d+)`, "m").exec(text);
  return m ? Number(m[1]) : Number.NaN;
}

process.on("exit", () => {
  if (!out) return;
  const io = readFileSync("/proc/self/io", "utf8");
  const status = readFileSync("/proc/self/status", "utf8");
  writeFileSync(
    out,
    JSON.stringify({
      seconds: (performance.now() - started) / 1000,
      // On a shared machine the wall clock counts other processes' turns; CPU time does not.
      cpuSeconds: (process.cpuUsage().user + process.cpuUsage().system) / 1e6,
      writeBytes: field(io, "write_bytes"),
      readBytes: field(io, "read_bytes"),
      peakRssMb: field(status, "VmHWM") / 1024,
    }),
  );
});

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error) => {
    process.stderr.write(`smartmoney: ${String(error)}\n`);
    process.exitCode = 1;
  },
);
