import * as v from "valibot";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { refreshFunding } from "../../src/funding/refresh";
import { WalletConnectionsSchema } from "../../src/schemas/funding";
import { createTestApp, type TestApp } from "../helpers/app";
import { addr, DAY, HOUR, rows, T0 } from "./rows";

const EXCHANGE = addr("exchange", 1);
const PLATFORM = addr("platform", 1);
const FACTORY = "0xab45c5a4b0c941a2f231c04c3f49182e1a254052";
const FUNDER = addr("funder", 1);
const W1 = addr("wallet", 1);
const W2 = addr("wallet", 2);
const W3 = addr("wallet", 3);
const W4 = addr("wallet", 4);
const W5 = addr("wallet", 5);
const GAS = addr("gas", 1);
const DEPOSIT = addr("deposit", 1);
const RELAY = addr("relay", 1);
const R1 = addr("recipient", 1);
const R2 = addr("recipient", 2);
const SLOW = addr("slow", 1);
const S1 = addr("slowpaid", 1);
const C1 = addr("coord", 1);
const C2 = addr("coord", 2);
const C3 = addr("coord", 3);
const MM1 = addr("maker", 1);
const MM2 = addr("maker", 2);

const RAW_TYPES = ["usdc_out", "usdc_up", "usdc_out2"];

let t: TestApp;
let key: string;

beforeAll(() => {
  t = createTestApp();
  const r = rows(t.db);
  r.label(EXCHANGE, "exchange", "Binance");
  r.label(PLATFORM, "platform", "Polymarket Rewards");
  r.label(FACTORY, "proxy_factory", "Polymarket Proxy Factory");
  // An ordinary funder: W1 and W2's first USDC; W1 gets a top-up later.
  r.transfer(EXCHANGE, FUNDER, 1_000, T0);
  r.transfer(FUNDER, W1, 100, T0 + 3 * HOUR);
  r.transfer(FUNDER, W2, 200, T0 + 5 * HOUR);
  r.transfer(FUNDER, W1, 50, T0 + 10 * DAY);
  // Labelled first senders fund nobody: W3 (exchange), W4 (platform), W5 (proxy factory).
  r.transfer(EXCHANGE, W3, 500, T0 + HOUR);
  r.transfer(EXCHANGE, W3, 250, T0 + 2 * DAY);
  r.transfer(PLATFORM, W4, 10, T0 + HOUR);
  r.transfer(FACTORY, W5, 10, T0 + HOUR);
  r.transfer(FUNDER, W5, 30, T0 + 2 * DAY); // not its first USDC: FUNDER is not W5's funder
  // Gas.
  r.transfer(GAS, W1, 1.5, T0 + 4 * HOUR, "POL");
  r.transfer(GAS, W1, 0.5, T0 + 6 * DAY, "POL");
  r.transfer(EXCHANGE, W2, 2, T0 + 6 * HOUR, "POL");
  // W1 and W3 pay into one deposit address, which sweeps to the exchange hours later.
  r.transfer(W1, DEPOSIT, 40, T0 + 3 * DAY);
  r.transfer(W3, DEPOSIT, 300, T0 + 4 * DAY);
  r.transfer(W3, DEPOSIT, 100, T0 + 5 * DAY);
  r.transfer(DEPOSIT, EXCHANGE, 440, T0 + 5 * DAY + 6 * HOUR);
  // A pass-through: 95% of an inflow forwarded within the hour.
  r.transfer(EXCHANGE, RELAY, 1_000, T0 + 20 * DAY);
  r.transfer(RELAY, R1, 500, T0 + 20 * DAY + 10 * 60_000);
  r.transfer(RELAY, R2, 450, T0 + 20 * DAY + 55 * 60_000);
  // Not a pass-through: half within the hour, the rest two hours later.
  r.transfer(EXCHANGE, SLOW, 1_000, T0 + 20 * DAY);
  r.transfer(SLOW, S1, 500, T0 + 20 * DAY + 30 * 60_000);
  r.transfer(SLOW, S1, 500, T0 + 20 * DAY + 2 * HOUR);
  // Coordinated timing: C1 and C2 enter three markets on the same side within 60 s; C3 joins C1
  // on two only; two market makers meet on three markets, but two-sided positions do not count.
  for (let i = 0; i < 3; i++) {
    const m = r.market("politics", null);
    const ts = T0 + (30 + i) * DAY;
    r.bet({ wallet: C1, market: m, category: "politics", side: "NO", price: 0.4, ts });
    r.bet({ wallet: C2, market: m, category: "politics", side: "NO", price: 0.4, ts: ts + 59_000 });
    if (i < 2)
      r.bet({
        wallet: C3,
        market: m,
        category: "politics",
        side: "NO",
        price: 0.4,
        ts: ts + 30_000,
      });
    r.bet({ wallet: MM1, market: m, category: "politics", price: 0.5, ts, twoSided: true });
    r.bet({ wallet: MM2, market: m, category: "politics", price: 0.5, ts, twoSided: true });
  }
  // Same side but 61 s apart, and same time but opposite sides: neither counts.
  for (let i = 0; i < 3; i++) {
    const m = r.market("sports", null);
    const ts = T0 + (40 + i) * DAY;
    r.bet({ wallet: C2, market: m, category: "sports", side: "YES", price: 0.4, ts });
    r.bet({
      wallet: C3,
      market: m,
      category: "sports",
      side: i === 0 ? "NO" : "YES",
      price: 0.4,
      ts: ts + (i === 0 ? 0 : 61_000),
    });
  }
  refreshFunding(t.db, t.clock.now());
  key = t.key("terminal");
});
afterAll(() => t.close());

async function connections(address: string, query = "") {
  const res = await t.get(`/v1/wallets/${address}/connections${query}`, key);
  const body = (await res.json()) as Record<string, any>;
  if (res.status === 200) expect(v.safeParse(WalletConnectionsSchema, body).issues).toBeUndefined();
  return { status: res.status, body };
}

const byType = (body: Record<string, any>, type: string) =>
  body.connections.filter((c: { type: string }) => c.type === type);

describe("funders", () => {
  it("is the first USDC sender unless labelled exchange, platform or proxy factory", () => {
    const funders = t.db.reader
      .prepare("SELECT wallet, funder FROM wallet_funding ORDER BY wallet")
      .all() as { wallet: string; funder: string | null }[];
    const funderOf = Object.fromEntries(funders.map((f) => [f.wallet, f.funder]));
    expect(funderOf[W1]).toBe(FUNDER);
    expect(funderOf[W2]).toBe(FUNDER);
    expect(funderOf[W3]).toBeNull();
    expect(funderOf[W4]).toBeNull();
    expect(funderOf[W5]).toBeNull();
    expect(funderOf[FUNDER]).toBeNull();
    // Labelled addresses and the deposit address are not wallets; nobody funded them.
    expect(EXCHANGE in funderOf).toBe(false);
    expect(DEPOSIT in funderOf).toBe(false);
  });
});

describe("GET /v1/wallets/{address}/connections", () => {
  it("serves funded_by with the total USDC from the funder, and the cluster", async () => {
    const { status, body } = await connections(W1.toUpperCase().replace("0X", "0x"));
    expect(status).toBe(200);
    expect(Object.keys(body)).toEqual(["address", "connections", "cluster"]);
    expect(body.address).toBe(W1);
    expect(byType(body, "funded_by")).toEqual([
      {
        counterparty: FUNDER,
        type: "funded_by",
        direction: "in",
        confidence: 1,
        exchange: null,
        amount: 150,
        first_seen: new Date(T0 + 3 * HOUR).toISOString(),
        last_seen: new Date(T0 + 10 * DAY).toISOString(),
      },
    ]);
    expect(body.cluster).toEqual({ id: `clu_${W1}`, role: "member", member_count: 2 });
  });

  it("serves funded on the funder, and the funder's cluster role", async () => {
    const { body } = await connections(FUNDER);
    const funded = byType(body, "funded");
    expect(funded.map((c: any) => [c.counterparty, c.direction, c.amount])).toEqual([
      [W1, "out", 150],
      [W2, "out", 200],
    ]);
    expect(body.cluster).toEqual({ id: `clu_${W1}`, role: "funder", member_count: 2 });
    // FUNDER paid W5 too, but was not its first sender.
    expect(body.connections.some((c: any) => c.counterparty === W5)).toBe(false);
    expect(byType(body, "exchange_withdrawal")).toMatchObject([
      {
        counterparty: EXCHANGE,
        direction: "in",
        confidence: 1,
        exchange: "Binance",
        amount: 1_000,
      },
    ]);
  });

  it("names the exchange on exchange withdrawals, on both ends", async () => {
    const { body } = await connections(W3);
    expect(byType(body, "exchange_withdrawal")).toEqual([
      {
        counterparty: EXCHANGE,
        type: "exchange_withdrawal",
        direction: "in",
        confidence: 1,
        exchange: "Binance",
        amount: 750,
        first_seen: new Date(T0 + HOUR).toISOString(),
        last_seen: new Date(T0 + 2 * DAY).toISOString(),
      },
    ]);
    expect(body.cluster).toBeNull();
    const exchange = await connections(EXCHANGE);
    expect(byType(exchange.body, "exchange_withdrawal").map((c: any) => c.counterparty)).toContain(
      W3,
    );
  });

  it("links nothing for platform and proxy-factory first funding", async () => {
    for (const wallet of [W4, W5]) {
      const { body } = await connections(wallet);
      expect(byType(body, "funded_by")).toEqual([]);
      expect(body.cluster).toBeNull();
    }
  });

  it("serves gas providers from POL transfers, with the exchange name when one sent it", async () => {
    const { body } = await connections(W1);
    expect(byType(body, "gas_provider")).toMatchObject([
      { counterparty: GAS, direction: "in", confidence: 1, exchange: null, amount: 2 },
    ]);
    const w2 = await connections(W2);
    expect(byType(w2.body, "gas_provider")).toMatchObject([
      { counterparty: EXCHANGE, direction: "in", exchange: "Binance", amount: 2 },
    ]);
    const gas = await connections(GAS);
    expect(byType(gas.body, "gas_provider")).toMatchObject([
      { counterparty: W1, direction: "out" },
    ]);
  });

  it("links wallets sharing an exchange deposit address at 0.8", async () => {
    const { body } = await connections(W1);
    expect(byType(body, "shared_deposit")).toEqual([
      {
        counterparty: W3,
        type: "shared_deposit",
        direction: "both",
        confidence: 0.8,
        exchange: "Binance",
        amount: 400,
        first_seen: new Date(T0 + 4 * DAY).toISOString(),
        last_seen: new Date(T0 + 5 * DAY).toISOString(),
      },
    ]);
    const w3 = await connections(W3);
    expect(byType(w3.body, "shared_deposit")).toMatchObject([{ counterparty: W1, amount: 40 }]);
    // Paying into a deposit address is not funding it.
    expect(byType(body, "funded")).toEqual([]);
  });

  it("links a pass-through distributor to whom it forwarded at 0.7, and not a slow payer", async () => {
    const { body } = await connections(R1);
    expect(byType(body, "pass_through")).toMatchObject([
      { counterparty: RELAY, direction: "in", confidence: 0.7, exchange: null, amount: 500 },
    ]);
    expect(byType(body, "funded_by")).toMatchObject([{ counterparty: RELAY }]);
    const relay = await connections(RELAY);
    expect(byType(relay.body, "pass_through").map((c: any) => c.counterparty)).toEqual([R2, R1]);
    const slow = await connections(S1);
    expect(byType(slow.body, "pass_through")).toEqual([]);
    expect(byType(slow.body, "funded_by")).toMatchObject([{ counterparty: SLOW, amount: 1_000 }]);
  });

  it("links wallets entering three markets on the same side within 60 s at 0.30", async () => {
    const { body } = await connections(C1);
    expect(byType(body, "coordinated_timing")).toEqual([
      {
        counterparty: C2,
        type: "coordinated_timing",
        direction: "both",
        confidence: 0.3,
        exchange: null,
        amount: null,
        first_seen: new Date(T0 + 30 * DAY).toISOString(),
        last_seen: new Date(T0 + 32 * DAY + 59_000).toISOString(),
      },
    ]);
    const c3 = await connections(C3);
    expect(byType(c3.body, "coordinated_timing")).toEqual([]);
    const maker = await connections(MM1);
    expect(maker.body.connections).toEqual([]);
  });

  it("orders by confidence, then recency, never serves raw flows, and honours limit", async () => {
    const { body } = await connections(W1);
    const types = body.connections.map((c: any) => c.type);
    for (const raw of RAW_TYPES) expect(types).not.toContain(raw);
    for (let i = 1; i < body.connections.length; i++) {
      const [a, b] = [body.connections[i - 1], body.connections[i]];
      expect(
        a.confidence > b.confidence ||
          (a.confidence === b.confidence && a.last_seen >= b.last_seen),
      ).toBe(true);
    }
    expect(body.connections.length).toBe(3);
    const limited = await connections(W1, "?limit=1");
    expect(limited.body.connections).toEqual([body.connections[0]]);
    expect((await connections(W1, "?limit=500")).status).toBe(200);
  });

  it("answers an unknown wallet with no connections and no cluster", async () => {
    const { status, body } = await connections(addr("nobody", 1));
    expect(status).toBe(200);
    expect(body).toEqual({ address: addr("nobody", 1), connections: [], cluster: null });
  });

  it.each([
    ["/v1/wallets/0x123/connections", "address must be an address"],
    [`/v1/wallets/${W1}/connections?limit=0`, "limit must be an integer from 1 to 500"],
    [`/v1/wallets/${W1}/connections?limit=501`, "limit"],
    [`/v1/wallets/${W1}/connections?limit=abc`, "limit"],
  ])("400 for %s", async (path, message) => {
    const res = await t.get(path, key);
    expect(res.status).toBe(400);
    const body = (await res.json()) as any;
    expect(body.error.code).toBe("bad_request");
    expect(body.error.message).toContain(message);
  });

  it("needs the terminal tier", async () => {
    const res = await t.get(`/v1/wallets/${W1}/connections`, t.key("free"));
    expect(res.status).toBe(403);
    expect(((await res.json()) as any).error.code).toBe("forbidden");
  });
});

describe("refreshFunding", () => {
  it("skips the transfer graph when transfers and labels are unchanged, and rebuilds on a change", () => {
    const again = refreshFunding(t.db, t.clock.now());
    expect(again.transfer_graph).toBe("unchanged");
    expect(again.sybil_clusters).toBe(2); // FUNDER's and RELAY's
    expect(again.coordinated_pairs).toBe(1);
    rows(t.db).label(GAS, "exchange", "Gas Exchange");
    const relabelled = refreshFunding(t.db, t.clock.now());
    expect(relabelled.transfer_graph).toBe("rebuilt");
    const w1 = t.db.reader
      .prepare(
        "SELECT exchange FROM wallet_connections WHERE address = ? AND type = 'gas_provider'",
      )
      .get(W1) as { exchange: string };
    expect(w1.exchange).toBe("Gas Exchange");
    expect(refreshFunding(t.db, t.clock.now()).transfer_graph).toBe("unchanged");
    // A new transfer, whatever it links, is a change.
    rows(t.db).transfer(EXCHANGE, W3, 5, T0 + 2 * HOUR);
    expect(refreshFunding(t.db, t.clock.now()).transfer_graph).toBe("rebuilt");
    expect(refreshFunding(t.db, t.clock.now()).transfer_graph).toBe("unchanged");
  });

  it("rebuilds coordinated timing hourly, not at every refresh", async () => {
    // A third shared market for C1 and C3.
    const r = rows(t.db);
    const m = r.market("culture", null);
    const ts = T0 + 50 * DAY;
    r.bet({ wallet: C1, market: m, category: "culture", side: "YES", price: 0.3, ts });
    r.bet({ wallet: C3, market: m, category: "culture", side: "YES", price: 0.3, ts: ts + 5_000 });
    t.clock.advance(59 * 60_000);
    const soon = refreshFunding(t.db, t.clock.now());
    expect(soon).toMatchObject({ coordinated_timing: "unchanged", coordinated_pairs: 1 });
    expect(byType((await connections(C3)).body, "coordinated_timing")).toEqual([]);
    t.clock.advance(60_000);
    const hourly = refreshFunding(t.db, t.clock.now());
    expect(hourly).toMatchObject({ coordinated_timing: "rebuilt", coordinated_pairs: 2 });
    expect(byType((await connections(C3)).body, "coordinated_timing")).toMatchObject([
      { counterparty: C1, confidence: 0.3, first_seen: new Date(T0 + 30 * DAY).toISOString() },
    ]);
  });
});
