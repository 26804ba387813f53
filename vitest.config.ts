import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // better-sqlite3 and real loopback servers are happiest in separate processes.
    pool: "forks",
    // One worker per core, reused across files instead of one fresh process per file: the
    // suite's files set up their own databases, servers and clocks, and restore what they
    // stub (process.env, stdout), so none depends on a fresh module state. Saves a process
    // start and a module graph import per file, about a third of the suite's CPU time.
    isolate: false,
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
