import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import * as sea from "node:sea";
import { gunzipSync } from "node:zlib";
import { cachedFile } from "../db/native";

/**
 * DuckDB's native addon inside the single executable (build/build-binary.ts). `duckdb.node`
 * loads `libduckdb.so` from its own folder (its RUNPATH is $ORIGIN), so both travel as SEA
 * assets (the library gzipped: 70 MB, 23 MB compressed) and are written side by side, once, to a
 * per-user cache folder named by the assets' hash. The bundle's copy of @duckdb/node-bindings
 * calls duckdbBinding() instead of `require("…/duckdb.node")`, which a SEA cannot do.
 */

export const DUCKDB_ADDON_ASSET = "duckdb.node";
export const DUCKDB_LIBRARY_ASSET = "libduckdb.so.gz";

let loaded: object | undefined;

export function duckdbBinding(): object {
  if (loaded) return loaded;
  if (!sea.isSea()) throw new Error("duckdbBinding() is for the single executable only");
  const addon = Buffer.from(sea.getAsset(DUCKDB_ADDON_ASSET));
  const library = Buffer.from(sea.getAsset(DUCKDB_LIBRARY_ASSET));
  const hash = createHash("sha256").update(addon).update(library).digest("hex").slice(0, 16);
  const folder = `duckdb-${hash}`;
  // Content-addressed and written by rename: a file that exists is the whole asset.
  const libraryFile = cachedFile(
    join(folder, "libduckdb.so"),
    "DuckDB's library",
    () => gunzipSync(library),
    existsSync,
  );
  const addonFile = cachedFile(
    join(folder, "duckdb.node"),
    "DuckDB's addon",
    () => addon,
    existsSync,
  );
  if (dirname(addonFile) !== dirname(libraryFile)) {
    throw new Error(`DuckDB's addon and library were cached in different folders (${folder})`);
  }
  const module = { exports: {} as object };
  process.dlopen(module, addonFile);
  loaded = module.exports;
  return loaded;
}
