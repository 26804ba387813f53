import { DuckDBInstance } from "@duckdb/node-api";

const src = process.argv[2];
const db = await DuckDBInstance.create(":memory:", { threads: "1", memory_limit: "256MB" });
const c = await db.connect();
await c.run("SET GLOBAL parquet_metadata_cache = true");
await c.run("SET GLOBAL late_materialization_max_rows = 0");
const wallets = (
  await c.runAndReadAll(
    `SELECT wallet FROM read_parquet('${src}') GROUP BY 1 ORDER BY hash(wallet) LIMIT 400`,
  )
)
  .getRows()
  .map((r) => r[0]);
const sql = `SELECT id, '0x' || lower(hex(tx_hash)) AS tx_hash, log_index, wallet, market_id, outcome, side, price, size, usd_value, ts FROM read_parquet(['${src}']) WHERE wallet = $1 ORDER BY ts DESC, id DESC LIMIT 51`;
async function time(label, fn) {
  for (let i = 0; i < 20; i++) await fn(wallets[i]);
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  for (const w of wallets) await fn(w);
  const cpu = process.cpuUsage(c0);
  console.log(
    label.padEnd(20),
    "wall ms",
    ((performance.now() - t0) / wallets.length).toFixed(2),
    "cpu ms",
    ((cpu.user + cpu.system) / 1000 / wallets.length).toFixed(2),
  );
}
await time("select 1", async () => (await c.runAndReadAll("SELECT 1")).getRows());
await time("unprepared", async (w) => (await c.runAndReadAll(sql, [w])).getRowObjectsJS());
const p = await c.prepare(sql);
await time("prepared", async (w) => {
  p.bindVarchar(1, w);
  (await p.runAndReadAll()).getRowObjectsJS();
});
await time("count only", async (w) =>
  (
    await c.runAndReadAll(`SELECT count(*) FROM read_parquet(['${src}']) WHERE wallet = $1`, [w])
  ).getRows(),
);
await time("explain", async (w) => (await c.runAndReadAll(`EXPLAIN ` + sql, [w])).getRows());
await c.run("RESET GLOBAL late_materialization_max_rows");
await time("late mat default", async (w) => (await c.runAndReadAll(sql, [w])).getRowObjectsJS());
await c.run("SET GLOBAL late_materialization_max_rows = 0");
const sql2 = `SELECT id, tx_hash, log_index, wallet, market_id, outcome, side, price, size, usd_value, ts FROM read_parquet(['${src}']) WHERE wallet = $1 ORDER BY ts DESC, id DESC LIMIT 51`;
await time("raw hash", async (w) => (await c.runAndReadAll(sql2, [w])).getRows());
const sql3 = `SELECT id, ts FROM read_parquet(['${src}']) WHERE wallet = $1 ORDER BY ts DESC, id DESC LIMIT 51`;
await time("id ts only", async (w) => (await c.runAndReadAll(sql3, [w])).getRows());
const sql4 = `SELECT * FROM read_parquet(['${src}']) WHERE wallet = $1`;
await time("all no order", async (w) => (await c.runAndReadAll(sql4, [w])).getRows());
