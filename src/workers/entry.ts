/**
 * Where a worker thread finds the module it runs. In the single binary, a worker cannot load a
 * module from the executable: each worker module is bundled into a SEA asset of its own
 * (build/build-binary.ts), written once to a per-user cache and loaded from there. From a
 * checkout, the module is TypeScript: the worker registers tsx's loader first (an eval worker
 * does not run the --import flags a worker inherits), then imports the source by its URL.
 */
import { createHash } from "node:crypto";
import { createRequire } from "node:module";
import * as sea from "node:sea";
import { writeCached } from "../db/native";

export interface WorkerEntry {
  /** The bundle's file, in the single binary. */
  bundle?: string;
  /** The module's own URL, from a checkout, with tsx's loader to register first. */
  url?: string;
  tsx?: string;
}

/**
 * The entry of the worker module `moduleUrl` (its `import.meta.url`), bundled as `asset` in the
 * binary; `what` names it in an error when no cache directory is writable.
 */
export function workerEntry(asset: string, moduleUrl: string, what: string): WorkerEntry {
  if (sea.isSea()) {
    const bytes = Buffer.from(sea.getAsset(asset));
    const hash = createHash("sha256").update(bytes).digest("hex").slice(0, 16);
    const stem = asset.replace(/\.cjs$/, "");
    return { bundle: writeCached(bytes, `${stem}-${hash}.cjs`, what) };
  }
  return { url: moduleUrl, tsx: createRequire(moduleUrl).resolve("tsx/esm/api") };
}

/**
 * The start of a worker's eval'd bootstrap: `load` is a promise of the module named by
 * `workerData.entry` (a WorkerEntry).
 */
export const LOAD_ENTRY = `
const entry = workerData.entry;
if (entry.tsx) require(entry.tsx).register();
const load = entry.bundle ? Promise.resolve(require(entry.bundle)) : import(entry.url);
`;
