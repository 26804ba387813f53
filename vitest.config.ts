import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // The migrated database test apps start from (test/helpers/app.ts).
    globalSetup: ["test/global-setup.ts"],
    // better-sqlite3 and real loopback servers are happiest in separate processes.
    pool: "forks",
    // Two workers more than cores (vitest's own default is one fewer, a single worker on two
    // cores): many files spend most of their time waiting on child processes, Litestream or
    // timers, and a spare worker runs another file's CPU work meanwhile.
    maxWorkers: availableParallelism() + 2,
    // Each worker is reused across files instead of one fresh process per file: the
    // suite's files set up their own databases, servers and clocks, and restore what they
    // stub (process.env, stdout), so none depends on a fresh module state. Saves a process
    // start and a module graph import per file, about a third of the suite's CPU time.
    isolate: false,
    // A guard against a hang, not a measure of speed: several tests refresh a whole fixture world
    // and take 10–15 s on a quiet 2-core machine, and a 30 s limit failed one of them (14.7 s
    // alone) while the machine ran benchmarks beside the suite.
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
