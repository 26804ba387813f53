import { DuckDBInstance } from "@duckdb/node-api";

const src = process.argv[2];
const db = await DuckDBInstance.create(":memory:", { threads: "1", memory_limit: "256MB" });
const c = await db.connect();
await c.run("SET GLOBAL parquet_metadata_cache = true");
await c.run("SET GLOBAL late_materialization_max_rows = 0");
const wallets = (
  await c.runAndReadAll(
    `SELECT wallet, count(*) n FROM read_parquet('${src}') GROUP BY 1 ORDER BY hash(wallet) LIMIT 400`,
  )
)
  .getRows()
  .map((r) => r[0]);
const cols = (
  await c.runAndReadAll(
    `SELECT path_in_schema, sum(total_compressed_size) FROM parquet_metadata('${src}') GROUP BY 1 ORDER BY 2 DESC`,
  )
).getRows();
console.log(cols.map((r) => r[0] + "=" + r[1]).join(" "));
for (const rg of [16384, 8192, 4096, 2048]) {
  const out = `/tmp/me/w-${rg}.parquet`;
  await c.run(
    `COPY (SELECT * FROM read_parquet('${src}')) TO '${out}' (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE ${rg})`,
  );
  const size = (
    await c.runAndReadAll(`SELECT sum(total_compressed_size) FROM parquet_metadata('${out}')`)
  ).getRows()[0][0];
  const fsz = (await import("node:fs")).statSync(out).size;
  const sql = `SELECT id, '0x' || lower(hex(tx_hash)) AS tx_hash, log_index, wallet, market_id, outcome, side, price, size, usd_value, ts FROM read_parquet(['${out}']) WHERE wallet = $1 ORDER BY ts DESC, id DESC LIMIT 51`;
  for (const w of wallets.slice(0, 20)) await (await db.connect()).runAndReadAll(sql, [w]);
  const conn = await db.connect();
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  for (const w of wallets) {
    const r = await conn.runAndReadAll(sql, [w]);
    r.getRowObjectsJS();
  }
  const cpu = process.cpuUsage(c0);
  console.log(
    rg,
    "file",
    fsz,
    "per query ms",
    ((performance.now() - t0) / wallets.length).toFixed(2),
    "cpu ms",
    ((cpu.user + cpu.system) / 1000 / wallets.length).toFixed(2),
  );
}
