import { createReadStream, createWriteStream, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGunzip, createZstdDecompress } from "node:zlib";

/**
 * Where an import reads its lines from. `open()` starts a fresh read each time it is called:
 * the importer reads the whole source once, and reads it again only when a file needs a second
 * look (lines that name a market defined further down, or to say where a duplicate key first
 * appeared). A generated source (the fixture seeder) can simply regenerate its lines.
 */
export interface ImportSource {
  /** Shown in every message as NAME:LINE. */
  name: string;
  open(): AsyncIterable<string> | Iterable<string>;
  /** Size in bytes when known, for progress. */
  size?: number;
}

/** Lines longer than this are refused without being held in memory whole. */
export const MAX_LINE_CHARS = 1 << 20;

/** The compression a file's name says it is in (docs/import.md, "Compressed files"). */
export type Compression = "gzip" | "zstd";

export function compressionOf(path: string): Compression | null {
  const name = path.toLowerCase();
  if (name.endsWith(".gz")) return "gzip";
  if (name.endsWith(".zst")) return "zstd";
  return null;
}

export function fileSource(path: string, name = path): ImportSource {
  const compression = compressionOf(path);
  if (compression === null) {
    return { name, size: statSync(path).size, open: () => readLines(createReadStream(path)) };
  }
  // No size: progress counts the text read, which is not the file's bytes.
  return { name, open: () => decompressedLines(path, compression, name) };
}

/**
 * The lines of a compressed file, decompressed as they stream. A damaged or cut-off file fails
 * the read, and so the import of the whole file, with the decompressor's reason.
 */
async function* decompressedLines(
  path: string,
  compression: Compression,
  name: string,
): AsyncGenerator<string> {
  const inflate = compression === "gzip" ? createGunzip() : createZstdDecompress();
  const file = createReadStream(path);
  file.on("error", (error) => inflate.destroy(error));
  file.pipe(inflate);
  try {
    yield* readLines(inflate);
  } catch (error) {
    // zlib's own errors (Z_DATA_ERROR, Z_BUF_ERROR for a cut-off file, ZSTD_error_…); a file
    // system error keeps its own message.
    const code = (error as { code?: unknown }).code;
    if (typeof code !== "string" || !/^(Z_|ZSTD_)/.test(code)) throw error;
    throw new Error(`${name}: cannot decompress it as ${compression}: ${(error as Error).message}`);
  } finally {
    file.destroy();
    inflate.destroy();
  }
}

/**
 * Splits a byte stream into lines (LF or CRLF, a leading BOM dropped). Memory stays at one
 * chunk plus one line: a line longer than MAX_LINE_CHARS is cut there and the rest of it
 * skipped, so the importer sees an overlong line and refuses it.
 */
export async function* readLines(stream: Readable): AsyncGenerator<string> {
  stream.setEncoding("utf8");
  let rest = "";
  let overlong = false;
  let first = true;
  for await (const chunk of stream as AsyncIterable<string>) {
    let text = chunk;
    if (first) {
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      first = false;
    }
    let start = 0;
    for (let nl = text.indexOf("\n"); nl !== -1; nl = text.indexOf("\n", start)) {
      if (overlong) {
        overlong = false;
        start = nl + 1;
        continue;
      }
      let line = rest === "" ? text.slice(start, nl) : rest + text.slice(start, nl);
      rest = "";
      if (line.endsWith("\r")) line = line.slice(0, -1);
      if (line.length > MAX_LINE_CHARS) line = line.slice(0, MAX_LINE_CHARS + 1);
      start = nl + 1;
      yield line;
    }
    if (!overlong) {
      rest += text.slice(start);
      if (rest.length > MAX_LINE_CHARS) {
        yield rest.slice(0, MAX_LINE_CHARS + 1);
        rest = "";
        overlong = true;
      }
    }
  }
  if (rest !== "" && !overlong) yield rest.endsWith("\r") ? rest.slice(0, -1) : rest;
}

/**
 * Standard input can be read only once, so it is first copied (streaming) to a private temporary
 * file, which then serves as a rereadable source. `cleanup` removes the copy.
 */
export async function spoolStream(
  input: Readable,
  name: string,
): Promise<{ source: ImportSource; path: string; cleanup(): void }> {
  const dir = mkdtempSync(join(tmpdir(), "smartmoney-import-"));
  const cleanup = () => rmSync(dir, { recursive: true, force: true });
  try {
    const path = join(dir, "input.jsonl");
    await pipeline(input, createWriteStream(path, { mode: 0o600 }));
    return { source: fileSource(path, name), path, cleanup };
  } catch (error) {
    cleanup();
    throw error;
  }
}
