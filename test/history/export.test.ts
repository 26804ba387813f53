import { existsSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync, zstdCompressSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withEngine } from "../../src/history/engine";
import { createTestApp, seededTestApp, type TestApp } from "../helpers/app";
import { runCli } from "../helpers/cli";

/**
 * `smartmoney export` writes Parquet that analysts' tools read and that `smartmoney import` takes
 * back; `import` reads Parquet and CSV files with the JSONL rules.
 */

const NOW = Date.parse("2026-11-01T00:00:00Z");
let world: TestApp;
let out: string;

beforeAll(async () => {
  world = (await seededTestApp({ now: NOW })).t;
  out = join(world.dir, "export");
});
afterAll(() => world.close());

const cli = (t: TestApp, args: string[]) =>
  runCli(args, { SMARTMONEY_DB: t.config.dbPath, SMARTMONEY_LOG_LEVEL: "error" });

/** Rows of a query over Parquet files, through DuckDB. */
function duck(sql: string): Promise<Record<string, unknown>[]> {
  return withEngine({ memoryMb: 256 }, async (c) =>
    (await c.runAndReadAll(sql)).getRowObjectsJS().map((row) => ({ ...row })),
  );
}

const tradesOf = (t: TestApp) =>
  t.db.reader
    .prepare(
      `SELECT t.tx_hash, t.log_index, t.wallet, m.condition_id, t.outcome, t.side, t.price,
              t.size, t.usd_value, t.ts
         FROM trades t JOIN markets m ON m.id = t.market_id ORDER BY t.tx_hash, t.log_index`,
    )
    .all();

describe("smartmoney status", () => {
  it("reports the fills stored, the newest one's time, and the bytes of the file and its WAL", async () => {
    // The world's connections hold the WAL open, with the seed's pages in it.
    const report = JSON.parse((await cli(world, ["status", "--json"])).stdout);
    const stored = world.db.reader
      .prepare("SELECT count(*) AS total, max(ts) AS newest FROM fills")
      .get() as { total: number; newest: number };
    expect(stored.total).toBeGreaterThan(10_000);
    expect(report.fills).toEqual({
      total: stored.total,
      recent: stored.total,
      history: 0,
      newest_at: new Date(stored.newest).toISOString(),
    });
    expect(report.database.bytes).toBe(statSync(world.config.dbPath).size);
    // The WAL as the command found it: its own close may checkpoint and truncate it.
    expect(report.database.wal_bytes).toBeGreaterThan(0);
  });
});

describe("smartmoney export", () => {
  it("writes the four files, each row counted, and tools read them back", async () => {
    const result = await cli(world, ["export", "--out", out, "--json"]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout) as { files: { file: string; rows: number }[] };
    const count = (sql: string) => world.db.reader.prepare(sql).pluck().get() as number;
    expect(Object.fromEntries(report.files.map((f) => [f.file, f.rows]))).toEqual({
      "fills.parquet": count("SELECT count(*) FROM fills"),
      "markets.parquet": count("SELECT count(*) FROM markets"),
      "bets.parquet": count("SELECT count(*) FROM wallet_bets"),
      "wallet_stats.parquet": count("SELECT count(*) FROM wallet_stats"),
    });
    expect(readdirSync(out).sort()).toEqual([
      "bets.parquet",
      "fills.parquet",
      "markets.parquet",
      "wallet_stats.parquet",
    ]);
    // The same totals through DuckDB as SQLite holds, timestamps as UTC instants.
    const [fills] = await duck(
      `SELECT count(*) AS n, sum(usd_value) AS usd, min(timestamp) AS first
         FROM read_parquet('${join(out, "fills.parquet")}')`,
    );
    const stored = world.db.reader
      .prepare("SELECT count(*) AS n, sum(usd_value) AS usd, min(ts) AS first FROM trades")
      .get() as { n: number; usd: number; first: number };
    expect(Number(fills!.n)).toBe(stored.n);
    expect(fills!.usd).toBeCloseTo(stored.usd, 6);
    expect((fills!.first as Date).getTime()).toBe(stored.first);
    const [top] = await duck(
      `SELECT wallet, smart_money_score FROM read_parquet('${join(out, "wallet_stats.parquet")}')
        ORDER BY smart_money_score DESC, wallet LIMIT 1`,
    );
    const best = world.db.reader
      .prepare(
        "SELECT address, smart_money_score FROM wallet_stats ORDER BY smart_money_score DESC, address LIMIT 1",
      )
      .get() as { address: string; smart_money_score: number };
    expect(top).toEqual({ wallet: best.address, smart_money_score: best.smart_money_score });
  });

  it("bounds the fills by --from and --to, and refuses a bad instant with one line", async () => {
    const from = "2026-10-01";
    const to = "2026-10-08T00:00:00Z";
    const windowed = join(world.dir, "window");
    const result = await cli(world, ["export", "--out", windowed, "--from", from, "--to", to]);
    expect(result.code).toBe(0);
    const [fills] = await duck(
      `SELECT count(*) AS n, min(timestamp) >= TIMESTAMPTZ '${from} 00:00:00+00' AS after,
              max(timestamp) < TIMESTAMPTZ '2026-10-08 00:00:00+00' AS before
         FROM read_parquet('${join(windowed, "fills.parquet")}')`,
    );
    const inWindow = world.db.reader
      .prepare("SELECT count(*) FROM fills WHERE ts >= ? AND ts < ?")
      .pluck()
      .get(Date.parse(`${from}T00:00:00Z`), Date.parse(to)) as number;
    expect(inWindow).toBeGreaterThan(0);
    expect(fills).toEqual({ n: BigInt(inWindow), after: true, before: true });

    const bad = await cli(world, ["export", "--out", windowed, "--from", "last tuesday"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--from.*"last tuesday" must be/);

    const file = join(windowed, "fills.parquet");
    const onFile = await cli(world, ["export", "--out", file]);
    expect(onFile.code).toBe(1);
    expect(onFile.stderr.trim()).toBe(
      `smartmoney: --out ${file}: a file is there; name a directory`,
    );
  });
});

describe("smartmoney import of Parquet and CSV", () => {
  let fresh: TestApp;
  beforeAll(async () => {
    if (!existsSync(join(out, "fills.parquet"))) {
      expect((await cli(world, ["export", "--out", out])).code).toBe(0);
    }
    fresh = createTestApp();
  });
  afterAll(() => fresh.close());

  it("imports exported markets and fills back: the same trades, to the bit", async () => {
    const result = await cli(fresh, [
      "import",
      join(out, "markets.parquet"),
      join(out, "fills.parquet"),
    ]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(tradesOf(fresh)).toEqual(tradesOf(world));
    // Idempotent, as JSONL is: every row is already present.
    const again = await cli(fresh, ["import", join(out, "fills.parquet"), "--json"]);
    const [report] = JSON.parse(again.stdout) as { counts: Record<string, unknown> }[];
    expect(report!.counts.trade).toEqual({ new: 0, updated: 0, present: tradesOf(world).length });
  });

  it("reads CSV text with the JSONL rules, and refuses a file with a bad row whole", async () => {
    const csv = join(fresh.dir, "more.csv");
    const hash = (n: number) => `0x${n.toString(16).padStart(64, "a")}`;
    const condition = (tradesOf(world)[0] as { condition_id: string }).condition_id;
    const wallet = `0x${"b".repeat(40)}`;
    const row = (n: number, price: string, time: string) =>
      ["trade", hash(n), "0", wallet, condition, "YES", "BUY", price, "10", "", time].join(",");
    const header =
      "type,tx_hash,log_index,wallet,condition_id,outcome,side,price,size,usd_value,timestamp";
    writeFileSync(
      csv,
      [header, row(1, "0.5", "2026-10-02T00:00:00Z"), row(2, "1.5", "1790000000000"), ""].join(
        "\n",
      ),
    );
    const before = tradesOf(fresh).length;
    const refused = await cli(fresh, ["import", csv]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`${csv}:2: price: must be between 0 and 1 (got 1.5)`);
    expect(tradesOf(fresh)).toHaveLength(before);

    writeFileSync(
      csv,
      [header, row(1, "0.5", "2026-10-02T00:00:00Z"), row(2, "0.25", "1790000000000")].join("\n"),
    );
    const imported = await cli(fresh, ["import", csv]);
    expect(imported.stderr).toBe("");
    expect(imported.code).toBe(0);
    const stored = fresh.db.reader
      .prepare("SELECT price, size, usd_value, ts FROM trades WHERE wallet = ? ORDER BY ts")
      .all(wallet);
    expect(stored).toEqual([
      { price: 0.25, size: 10, usd_value: 2.5, ts: 1790000000000 },
      { price: 0.5, size: 10, usd_value: 5, ts: Date.parse("2026-10-02T00:00:00Z") },
    ]);
  });

  it("reads JSONL and CSV compressed with gzip or zstd, and refuses a damaged file whole", async () => {
    const hash = (n: number) => `0x${n.toString(16).padStart(64, "c")}`;
    const condition = (tradesOf(world)[0] as { condition_id: string }).condition_id;
    const wallet = `0x${"d".repeat(40)}`;
    const trade = (n: number) => ({
      type: "trade",
      tx_hash: hash(n),
      log_index: 0,
      wallet,
      condition_id: condition,
      outcome: "NO",
      side: "BUY",
      price: 0.4,
      size: 5,
      timestamp: 1_790_000_000_000 + n,
    });
    const jsonl = (ns: number[]) => `${ns.map((n) => JSON.stringify(trade(n))).join("\n")}\n`;
    const csv = (ns: number[]) =>
      [
        "type,tx_hash,log_index,wallet,condition_id,outcome,side,price,size,timestamp",
        ...ns.map((n) => Object.values(trade(n)).join(",")),
      ].join("\n");
    const files = {
      "a.jsonl.gz": gzipSync(jsonl([1, 2])),
      "b.jsonl.zst": zstdCompressSync(jsonl([3])),
      "c.CSV.GZ": gzipSync(csv([4, 5])),
      "d.csv.zst": zstdCompressSync(csv([6])),
    };
    for (const [name, data] of Object.entries(files)) writeFileSync(join(fresh.dir, name), data);
    const imported = await cli(fresh, [
      "import",
      ...Object.keys(files).map((name) => join(fresh.dir, name)),
    ]);
    expect(imported.stderr).toBe("");
    expect(imported.code).toBe(0);
    const stored = () =>
      fresh.db.reader.prepare("SELECT count(*) FROM trades WHERE wallet = ?").pluck().get(wallet);
    expect(stored()).toBe(6);

    // Cut short inside its second line: the first line is whole, and still not kept.
    const whole = gzipSync(jsonl([7, 8]));
    const cut = join(fresh.dir, "cut.jsonl.gz");
    writeFileSync(cut, whole.subarray(0, whole.length - 12));
    const refused = await cli(fresh, ["import", cut]);
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim()).toBe(
      `smartmoney: ${cut}: cannot decompress it as gzip: unexpected end of file`,
    );
    expect(stored()).toBe(6);

    const packed = join(fresh.dir, "fills.parquet.gz");
    writeFileSync(packed, gzipSync(Buffer.from("PAR1")));
    const parquet = await cli(fresh, ["import", packed]);
    expect(parquet.code).toBe(1);
    expect(parquet.stderr.trim()).toBe(
      `smartmoney: ${packed}: a Parquet file is compressed inside; decompress it and import the .parquet`,
    );
  });

  it("refuses a file that is not Parquet, or has no type column, with one line", async () => {
    const notParquet = join(fresh.dir, "junk.parquet");
    writeFileSync(notParquet, "this is not parquet\n");
    const junk = await cli(fresh, ["import", notParquet]);
    expect(junk.code).toBe(1);
    expect(junk.stderr).toMatch(/junk\.parquet: cannot read it as Parquet: /);
    expect(junk.stderr.trim().split("\n")).toHaveLength(1);

    const untyped = join(fresh.dir, "untyped.csv");
    writeFileSync(untyped, "slug,title\nx,y\n");
    const result = await cli(fresh, ["import", untyped]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('untyped.csv: has no "type" column');

    const missing = join(fresh.dir, "missing.jsonl");
    expect((await cli(fresh, ["import", missing])).stderr.trim()).toBe(
      `smartmoney: ${missing}: no such file`,
    );
    expect((await cli(fresh, ["import", fresh.dir])).stderr.trim()).toBe(
      `smartmoney: ${fresh.dir}: not a file (a directory?): name the files in it`,
    );
  });
});
