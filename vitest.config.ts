import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // better-sqlite3 and real loopback servers are happiest in separate processes.
    pool: "forks",
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
