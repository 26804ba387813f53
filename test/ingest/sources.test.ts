import { existsSync, readFileSync } from "node:fs";
import { Readable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { compressionOf, MAX_LINE_CHARS, readLines, spoolStream } from "../../src/ingest/sources";
import { tabularFormatOf } from "../../src/ingest/tabular";

const bytes = (...chunks: (string | Buffer)[]) =>
  Readable.from(
    chunks.map((c) => (typeof c === "string" ? Buffer.from(c) : c)),
    { objectMode: false },
  );

async function collect(stream: Readable): Promise<string[]> {
  const lines: string[] = [];
  for await (const line of readLines(stream)) lines.push(line);
  return lines;
}

describe("readLines", () => {
  it("splits on LF and CRLF, across chunks, with or without a final newline", async () => {
    expect(await collect(bytes("a\r\nb", "c\n", "\nd"))).toEqual(["a", "bc", "", "d"]);
    expect(await collect(bytes("a\n"))).toEqual(["a"]);
    expect(await collect(bytes(""))).toEqual([]);
  });

  it("drops a leading byte order mark", async () => {
    expect(await collect(bytes("\ufeff{}\n{}"))).toEqual(["{}", "{}"]);
  });

  it("keeps a multi-byte character split between chunks whole", async () => {
    const text = Buffer.from('{"title":"Pokémon €"}\n');
    const cut = text.indexOf(0xe2) + 1; // inside the euro sign
    expect(await collect(bytes(text.subarray(0, cut), text.subarray(cut)))).toEqual([
      '{"title":"Pokémon €"}',
    ]);
  });

  it("cuts an overlong line just past the limit and carries on with the next", async () => {
    const long = "x".repeat(MAX_LINE_CHARS + 5000);
    const lines = await collect(bytes(long.slice(0, 700_000), long.slice(700_000), "\nnext\n"));
    expect(lines.map((l) => l.length)).toEqual([MAX_LINE_CHARS + 1, 4]);
    expect(lines[1]).toBe("next");
  });
});

describe("spoolStream", () => {
  let cleanup: (() => void) | undefined;
  afterEach(() => cleanup?.());

  it("copies a one-shot stream to a rereadable source", async () => {
    const spooled = await spoolStream(bytes("a\n", "b\n"), "stdin");
    cleanup = spooled.cleanup;
    expect(spooled.source.name).toBe("stdin");
    expect(spooled.source.size).toBe(4);
    for (let pass = 0; pass < 2; pass++) {
      const lines: string[] = [];
      for await (const line of spooled.source.open()) lines.push(line);
      expect(lines).toEqual(["a", "b"]);
    }
  });

  it("removes its copy on cleanup", async () => {
    const spooled = await spoolStream(bytes("z\n"), "stdin");
    expect(readFileSync(spooled.path, "utf8")).toBe("z\n");
    spooled.cleanup();
    expect(existsSync(spooled.path)).toBe(false);
  });
});

describe("a file's format and compression, by its name", () => {
  it("reads .gz and .zst as compression, and a compressed .csv as CSV", () => {
    const cases = [
      "fills.jsonl",
      "fills.jsonl.gz",
      "FILLS.JSONL.ZST",
      "trades.csv",
      "trades.CSV.GZ",
      "trades.csv.zst",
      "fills.parquet",
      "dump.gz",
    ];
    expect(cases.map((name) => [name, compressionOf(name), tabularFormatOf(name)])).toEqual([
      ["fills.jsonl", null, null],
      ["fills.jsonl.gz", "gzip", null],
      ["FILLS.JSONL.ZST", "zstd", null],
      ["trades.csv", null, "csv"],
      ["trades.CSV.GZ", "gzip", "csv"],
      ["trades.csv.zst", "zstd", "csv"],
      ["fills.parquet", null, "parquet"],
      ["dump.gz", "gzip", null],
    ]);
  });
});
