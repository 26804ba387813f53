import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { cli, mintKey, startServer, stopServer } from "./helpers";

const dir = mkdtempSync(join(tmpdir(), "smartmoney-files-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const mode = (path: string) => (statSync(path).mode & 0o777).toString(8);

/** Each test starts real processes from source; a loaded machine makes that slow. */
const PROCESS_TEST_MS = 120_000;

describe("files holding customers' data are owner-only (0600) under a umask of 022", () => {
  it(
    "the database, its -wal and -shm, the rate-limit database, the key file and a backup",
    async () => {
      const db = join(dir, "private.db");
      const key = await mintKey(db, "files");
      // The API alone (--no-jobs): the files below must be the server's own doing.
      const server = await startServer(db, ["--no-jobs"]);
      try {
        const res = await fetch(`${server.base}/v1/_ping`, {
          headers: { authorization: `Bearer ${key}` },
        });
        expect(res.status).toBe(200);
        // While the server runs, every file of both databases exists.
        const files = ["", "-wal", "-shm", ".limits", ".limits-wal", ".limits-shm", ".key"];
        for (const suffix of files) {
          expect(existsSync(`${db}${suffix}`), suffix).toBe(true);
          expect(mode(`${db}${suffix}`), `${db}${suffix}`).toBe("600");
        }
        const copy = join(dir, "copy.db");
        await cli(db, ["backup", copy]);
        expect(mode(copy)).toBe("600");
      } finally {
        await stopServer(server);
      }
    },
    PROCESS_TEST_MS,
  );
});
