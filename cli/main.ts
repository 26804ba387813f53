import { runInSizedHeap } from "./sized-heap";

const argv = process.argv.slice(2);
// The commands are loaded only where they run: a process that starts itself again in a sized
// heap only waits, and stays small (the bundle inlines this import).
(runInSizedHeap(argv) ?? import("./program").then(({ main }) => main(argv))).then(
  (code) => {
    process.exitCode = code;
  },
  (error) => {
    process.stderr.write(`smartmoney: ${String(error)}\n`);
    process.exitCode = 1;
  },
);
