import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withEngine } from "../../src/history/engine";
import { importJsonl } from "../../src/ingest/import";
import { tabularSource } from "../../src/ingest/tabular";
import { createTestApp, type TestApp } from "../helpers/app";
import { conditionId, market } from "./builders";

/**
 * A Parquet file DuckDB cannot read whole within its memory cap. Its streamed result then ends
 * as if the file did (the C API answers "no more rows" for an error too): the import must refuse
 * the file, not keep the rows read before the failure.
 */
const ROWS = 250_000;
let t: TestApp;
let file: string;

beforeAll(async () => {
  t = createTestApp();
  file = join(t.dir, "trades.parquet");
  // Trades of one market, shaped like a real dump: random hashes and wallets, zstd, three row
  // groups of DuckDB's default 122,880 rows. With a 64 MB cap the stream ends after about 59k.
  await withEngine({ memoryMb: 1024, threads: 1 }, (duck) =>
    duck.run(`COPY (SELECT 'trade' AS type, '0x' || sha256(i::VARCHAR) AS tx_hash,
        (i % 7)::BIGINT AS log_index, '0x' || substr(sha256('w' || (i % 50000)), 1, 40) AS wallet,
        '${conditionId(1)}' AS condition_id,
        CASE WHEN i % 2 = 0 THEN 'YES' ELSE 'NO' END AS outcome,
        CASE WHEN i % 3 = 0 THEN 'SELL' ELSE 'BUY' END AS side,
        (i % 97 + 1) / 100 AS price, (i % 1013 + 1) * 1.5 AS size, (i % 977) * 0.75 AS usd_value,
        TIMESTAMP '2026-01-01' + INTERVAL (i) SECOND AS timestamp
      FROM range(${ROWS}) t(i))
      TO '${file}' (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 122880)`),
  );
  const defined = await importJsonl(
    { db: t.db, clock: t.clock },
    { name: "market.jsonl", open: () => [JSON.stringify(market(1))] },
  );
  expect(defined.ok).toBe(true);
});
afterAll(() => t.close());

const fills = () => t.db.reader.prepare("SELECT count(*) FROM fills").pluck().get() as number;

describe("a Parquet file read past DuckDB's memory cap", () => {
  it("is refused whole, naming how far the reader got, and stores no fill", async () => {
    const source = tabularSource(file, "parquet", "trades.parquet", { memoryMb: 64 });
    await expect(importJsonl({ db: t.db, clock: t.clock }, source)).rejects.toThrow(
      new RegExp(
        `^${file}: cannot read it as Parquet: the reader stopped after \\d+ of its ${ROWS} rows, most likely for want of memory \\(64 MB\\): write it with smaller row groups$`,
      ),
    );
    expect(fills()).toBe(0);
  });

  it("reads every row within the default cap", async () => {
    let rows = 0;
    for await (const _ of tabularSource(file, "parquet").open()) rows += 1;
    expect(rows).toBe(ROWS);
  });
});
