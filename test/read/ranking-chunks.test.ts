import { describe, expect, it } from "vitest";
import { createIngest } from "../../src/ingest/ingest";
import { refreshNow } from "../../src/jobs/refresh";
import { createMarketQueries } from "../../src/read/markets";
import { seededTestAppPerFile } from "../helpers/app";

// The market rankings read their window in chunks of market ids and give the event loop back
// between chunks (src/read/markets.ts, WINDOW_CHUNK_MARKETS), so a ranking of the large world
// does not hold every other request for 100–200 ms. Read in chunks, a ranking must be the one
// statement's ranking, and never a mix of two refreshes.

const NOW = Date.parse("2026-11-01T00:00:00.000Z");
const HOUR = 3_600_000;
const world = seededTestAppPerFile({ now: NOW });

type Queries = ReturnType<typeof createMarketQueries>;
const KINDS = ["movers", "trending", "moving"] as const;
let generation = 0;

/** Every ranking of a window, as one fresh reader (its own cache) computes them. */
async function rankingsOf(queries: Queries, filter: Parameters<Queries["movers"]>[0]) {
  const ctx = { generation: ++generation, now: NOW };
  return Promise.all(KINDS.map((kind) => queries[kind](filter, ctx)));
}

describe("rankings read in chunks", () => {
  it("are the rankings of one statement, for every window and filter", async () => {
    const chunked = createMarketQueries(world.t.db, { windowChunkMarkets: 7 });
    const whole = createMarketQueries(world.t.db, { windowChunkMarkets: Number.MAX_SAFE_INTEGER });
    const category = (
      world.t.db.reader
        .prepare("SELECT category FROM markets WHERE category IS NOT NULL LIMIT 1")
        .get() as { category: string }
    ).category;
    let ranked = 0;
    for (const periodHours of [1, 5, 23, 24, 100, 168]) {
      for (const filter of [{}, { category }, { search: "will" }]) {
        const f = { periodHours, ...filter };
        const [a, b] = [await rankingsOf(chunked, f), await rankingsOf(whole, f)];
        expect(a, JSON.stringify(f)).toEqual(b);
        ranked += a[0]!.length;
      }
    }
    expect(ranked).toBeGreaterThan(100);
  });

  it("let other work run between chunks, and share one read among the three rankings", async () => {
    // The reader, with the window statement's reads counted.
    let windowReads = 0;
    const reader = world.t.db.reader;
    const counted = new Proxy(reader, {
      get(target, prop) {
        if (prop === "prepare") {
          return (sql: string) => {
            const statement = target.prepare(sql);
            if (!sql.includes("market_hours h")) return statement;
            const iterate = statement.iterate.bind(statement);
            statement.iterate = ((...args: unknown[]) => {
              windowReads += 1;
              return iterate(...(args as []));
            }) as typeof statement.iterate;
            return statement;
          };
        }
        const value = Reflect.get(target, prop, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const queries = createMarketQueries(
      {
        ...world.t.db,
        reader: counted,
        path: world.t.db.path,
        writer: world.t.db.writer,
        storage: world.t.db.storage,
      },
      { windowChunkMarkets: 7 },
    );
    let turns = 0;
    let done = false;
    const turn = () => {
      turns += 1;
      if (!done) setImmediate(turn);
    };
    setImmediate(turn);
    const ctx = { generation: ++generation, now: NOW };
    const lists = await Promise.all(KINDS.map((kind) => queries[kind]({ periodHours: 168 }, ctx)));
    done = true;
    const chunks = Math.ceil(
      ((world.t.db.reader.prepare("SELECT max(id) AS n FROM markets").get() as { n: number }).n +
        1) /
        7,
    );
    // One statement per chunk, for all three rankings together.
    expect(windowReads).toBe(chunks);
    // The loop turned between chunks: they did not run back to back.
    expect(turns).toBeGreaterThanOrEqual(chunks - 1);
    expect(lists[0]!.length).toBeGreaterThan(0);
  });

  it("start again when a refresh lands between chunks", async () => {
    const chunked = createMarketQueries(world.t.db, { windowChunkMarkets: 7 });
    const filter = { periodHours: 24 };
    const before = await rankingsOf(chunked, filter);
    // A trade in the last market, read by the last chunk, refreshed while the first chunks are
    // read: a reading that kept its first chunks would mix the two refreshes.
    const last = world.t.db.reader
      .prepare(
        "SELECT m.id, m.slug FROM markets m JOIN market_hours h ON h.market_id = m.id ORDER BY m.id DESC LIMIT 1",
      )
      .get() as { id: number; slug: string };
    const first = world.t.db.reader
      .prepare(
        "SELECT m.id FROM markets m JOIN market_hours h ON h.market_id = m.id ORDER BY m.id LIMIT 1",
      )
      .get() as { id: number };
    const reading = Promise.all(
      KINDS.map((kind) => chunked[kind](filter, { generation: ++generation, now: NOW })),
    );
    await new Promise((resolve) => setImmediate(resolve));
    const ingest = createIngest(world.t.db, world.t.clock);
    const trade = (marketId: number, n: number) => ({
      tx_hash: `0x${n.toString(16).padStart(64, "a")}`,
      log_index: 0,
      wallet: `0x${"ab".repeat(20)}`,
      market_id: marketId,
      outcome: "YES" as const,
      side: "BUY" as const,
      price: 0.5,
      size: 1_000_000,
      usd_value: 500_000,
      ts: NOW - HOUR / 2,
    });
    world.t.db.writer.transaction(() =>
      ingest.insertTrades([trade(first.id, 1), trade(last.id, 2)]),
    )();
    refreshNow(world.t.app);
    const read = await reading;
    const after = await rankingsOf(
      createMarketQueries(world.t.db, { windowChunkMarkets: Number.MAX_SAFE_INTEGER }),
      filter,
    );
    expect(read).toEqual(after);
    expect(read).not.toEqual(before);
    // Both markets moved to the top of the volume ranking: the chunks saw one refresh.
    const top = read[0]!.slice(0, 2).map((r) => r.row.slug);
    expect(top).toContain(last.slug);
  });

  it("end in one transaction when refreshes keep landing between chunks", async () => {
    const chunked = createMarketQueries(world.t.db, { windowChunkMarkets: 7 });
    const filter = { periodHours: 48 };
    const ingest = createIngest(world.t.db, world.t.clock);
    // The first and the last market that trade: read by the first chunk and by the last.
    const [first, last] = ["ASC", "DESC"].map(
      (order) =>
        (
          world.t.db.reader
            .prepare(`SELECT market_id FROM market_hours ORDER BY market_id ${order} LIMIT 1`)
            .get() as { market_id: number }
        ).market_id,
    );
    let refreshes = 0;
    let done = false;
    // A refresh on every turn of the event loop: no two chunks ever see the same refresh.
    const churn = () => {
      if (done) return;
      refreshes += 1;
      world.t.db.writer.transaction(() =>
        ingest.insertTrades(
          [first!, last!].map((market, i) => ({
            tx_hash: `0x${(1000 + 2 * refreshes + i).toString(16).padStart(64, "c")}`,
            log_index: 0,
            wallet: `0x${"cd".repeat(20)}`,
            market_id: market,
            outcome: "NO" as const,
            side: "BUY" as const,
            price: 0.25,
            size: 4_000,
            usd_value: 1_000,
            ts: NOW - HOUR,
          })),
        ),
      )();
      refreshNow(world.t.app);
      setImmediate(churn);
    };
    setImmediate(churn);
    const read = await rankingsOf(chunked, filter);
    done = true;
    // Three tries, the last without turns of the loop: it saw one refresh, the latest.
    expect(refreshes).toBeGreaterThan(2);
    const after = await rankingsOf(
      createMarketQueries(world.t.db, { windowChunkMarkets: Number.MAX_SAFE_INTEGER }),
      filter,
    );
    expect(read).toEqual(after);
  });
});
