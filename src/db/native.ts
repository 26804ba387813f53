import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import * as sea from "node:sea";

/** Name of the SEA asset holding better-sqlite3's compiled addon (see build/build-binary.ts). */
export const NATIVE_ASSET = "better_sqlite3.node";

let loaded: { file: string; exports: object } | undefined;

/**
 * Inside the single executable, better-sqlite3 cannot `require` its addon: it travels as a SEA
 * asset, is written once to a per-user cache keyed by its hash, and loaded with process.dlopen.
 * From a checkout this returns undefined and better-sqlite3 finds its addon as usual.
 */
export function nativeBinding(): object | undefined {
  if (loaded) return loaded.exports;
  if (!sea.isSea()) return undefined;
  const bytes = Buffer.from(sea.getAsset(NATIVE_ASSET));
  const hash = createHash("sha256").update(bytes).digest("hex").slice(0, 16);
  loadNativeBinding(writeCached(bytes, `better_sqlite3-${hash}.node`, "the SQLite addon"));
  return loaded!.exports;
}

/**
 * The addon's file when this process loaded it from the SEA asset, else undefined: a worker
 * thread of the binary loads the same file (loadNativeBinding), since it has no asset to read.
 */
export function nativeBindingFile(): string | undefined {
  nativeBinding();
  return loaded?.file;
}

/** Loads the addon from `file` (nativeBindingFile of the thread that started this one). */
export function loadNativeBinding(file: string): void {
  const module = { exports: {} as object };
  process.dlopen(module, file);
  loaded = { file, exports: module.exports };
}

/**
 * Writes an executable asset once to a per-user cache (the same bytes are reused), falling back to
 * the temp folder when the home directory is read-only. Also used for the Litestream binary.
 */
export function writeCached(bytes: Buffer, name: string, what: string): string {
  return cachedFile(
    name,
    what,
    () => bytes,
    (file) => readFileSync(file).equals(bytes),
  );
}

/**
 * The cache's copy of `name` (which may name a subfolder), written from `make()` when it is not
 * there yet or `cached(file)` rejects it; the write is atomic (a rename), so a file that exists
 * is whole. For large assets whose name carries a hash of their content, pass `cached` that
 * only checks the file exists, to spare reading it back on every start.
 */
export function cachedFile(
  name: string,
  what: string,
  make: () => Buffer,
  cached: (file: string) => boolean,
): string {
  const candidates = [join(homedir(), ".cache", "smartmoney"), join(tmpdir(), "smartmoney-cache")];
  let lastError: unknown;
  let bytes: Buffer | undefined;
  for (const dir of candidates) {
    const file = join(dir, name);
    try {
      if (cached(file)) return file;
    } catch {
      // not cached yet
    }
    try {
      mkdirSync(dirname(file), { recursive: true });
      const partial = `${file}.${process.pid}.tmp`;
      bytes ??= make();
      writeFileSync(partial, bytes, { mode: 0o755 });
      renameSync(partial, file);
      return file;
    } catch (error) {
      lastError = error;
    }
  }
  throw new Error(`cannot write ${what} to a cache directory: ${String(lastError)}`);
}
