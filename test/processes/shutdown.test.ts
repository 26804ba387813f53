import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { startServer, stopServer } from "./helpers";

const dir = mkdtempSync(join(tmpdir(), "smartmoney-shutdown-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Each test starts real processes from source; a loaded machine makes that slow. */
const PROCESS_TEST_MS = 120_000;

describe("serve shuts down within its grace period", () => {
  it(
    "a silent half-sent request and an idle keep-alive client do not hold it after SIGTERM",
    async () => {
      const server = await startServer(join(dir, "s.db"), ["--shutdown-grace", "1s"]);
      try {
        const { port } = new URL(server.base);
        const idle = connect(Number(port), "127.0.0.1");
        await once(idle, "connect");
        idle.write("GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n");
        await once(idle, "data");
        const idleClosed = once(idle, "close");
        const half = connect(Number(port), "127.0.0.1");
        await once(half, "connect");
        half.write("GET /healthz HTTP/1.1\r\nHost: te"); // and then silence, socket held open
        const halfClosed = once(half, "close");

        server.child.kill("SIGTERM");
        // Without a bound, the half-sent request held the process until the client let go.
        expect(await server.exited).toBe(0);
        await idleClosed;
        await halfClosed;
      } finally {
        await stopServer(server);
      }
    },
    PROCESS_TEST_MS,
  );

  it(
    "refuses an invalid grace period with one line and exit 1",
    async () => {
      await expect(startServer(join(dir, "t.db"), ["--shutdown-grace", "soon"])).rejects.toThrow(
        /^serve exited \(1\): .*SMARTMONEY_SHUTDOWN_GRACE\/--shutdown-grace: "soon" must be a duration/,
      );
    },
    PROCESS_TEST_MS,
  );
});
