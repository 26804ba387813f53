import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import * as sea from "node:sea";
import { gunzipSync } from "node:zlib";
import { writeCached } from "../db/native";
import type { ReplicaConfig } from "./replica-url";

/**
 * Litestream (https://litestream.io) streams SQLite's WAL to object storage or another disk.
 * It comes from the npm package @flydotio/litestream-linux-x64 (Litestream 0.3.13). Inside the
 * single executable it travels gzipped as a SEA asset (build/build-binary.ts) and is written
 * once to the same per-user cache as the SQLite addon; from a checkout it is run from
 * node_modules.
 */
export const LITESTREAM_ASSET = "litestream.gz";
const PACKAGE = "@flydotio/litestream-linux-x64";

let cached: string | undefined;

/** The path of a runnable Litestream binary. Throws with an operator-facing message. */
export function litestreamBinary(): string {
  if (cached) return cached;
  if (sea.isSea()) {
    const bytes = gunzipSync(Buffer.from(sea.getAsset(LITESTREAM_ASSET)));
    const hash = createHash("sha256").update(bytes).digest("hex").slice(0, 16);
    cached = writeCached(bytes, `litestream-${hash}`, "the Litestream binary");
    return cached;
  }
  if (process.platform !== "linux" || process.arch !== "x64") {
    throw new Error(
      `replication needs Litestream, shipped for linux x64 only (this is ${process.platform} ${process.arch})`,
    );
  }
  try {
    const manifest = createRequire(import.meta.url).resolve(`${PACKAGE}/package.json`);
    const binary = join(dirname(manifest), "litestream");
    if (existsSync(binary)) {
      cached = binary;
      return binary;
    }
  } catch {
    // not installed: the message below says how to fix it
  }
  throw new Error(`Litestream not found: npm install ${PACKAGE} (or use the single binary)`);
}

/**
 * Litestream's configuration for one database. JSON is YAML, so no YAML writer is needed.
 * `addr` serves its Prometheus metrics on loopback: the supervisor reads the lag there.
 */
export function litestreamConfig(options: {
  dbPath: string;
  replica: ReplicaConfig;
  metricsPort?: number;
}): string {
  const replica = { ...options.replica, "sync-interval": "1s" };
  return `${JSON.stringify(
    {
      ...(options.metricsPort ? { addr: `127.0.0.1:${options.metricsPort}` } : {}),
      dbs: [{ path: resolve(options.dbPath), replicas: [replica] }],
    },
    null,
    2,
  )}\n`;
}
