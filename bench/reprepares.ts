/**
 * `npm run reprepares -- PID [SECONDS]`: the SQL statements a running smartmoney process (the
 * built binary, or node running the source) prepares again while you drive it for SECONDS
 * (default 30): run it beside a bench (`npm run bench`, `bench:refresh`, `bench:stall`,
 * `bench:webhooks`, `bench:bulk`). Prints each statement with how many times, most often
 * first. A statement listed many times pays a parse and a plan on every call; the fix is `+?`
 * (docs/architecture.md, "Bound parameters the planner reads"). Needs gdb: bench/lib/reprepares.ts.
 */
import { gdbAvailable, watchReprepares } from "./lib/reprepares";

const [pidArg, secondsArg = "30"] = process.argv.slice(2);
const pid = Number(pidArg);
const seconds = Number(secondsArg);
if (!Number.isInteger(pid) || pid <= 0 || !(seconds > 0)) {
  process.stderr.write("usage: npm run reprepares -- PID [SECONDS]\n");
  process.exit(2);
}
if (!gdbAvailable()) {
  process.stderr.write("reprepares: needs gdb (apt-get install gdb)\n");
  process.exit(1);
}
try {
  const watch = await watchReprepares(pid);
  process.stderr.write(`reprepares: watching ${pid} for ${seconds} s\n`);
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  const counts = [...(await watch.stop())].sort((a, b) => b[1] - a[1]);
  for (const [sql, n] of counts) process.stdout.write(`${String(n).padStart(7)}  ${sql}\n`);
  if (counts.length === 0) process.stderr.write("reprepares: none\n");
} catch (error) {
  process.stderr.write(`reprepares: ${(error as Error).message}\n`);
  process.exit(1);
}
