import * as v from "valibot";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rebuildClusters } from "../../src/funding/clusters";
import { refreshFunding } from "../../src/funding/refresh";
import {
  ClusterDetailSchema,
  ClusterGraphSchema,
  SybilClustersSchema,
} from "../../src/schemas/funding";
import { createTestApp, type TestApp } from "../helpers/app";
import { addr, DAY, HOUR, rows, T0 } from "./rows";

const FACTORY_CHECKSUMMED = "0xaB45c5A4B0c941a2F231C04C3f49182e1A254052";
const OTHER_FACTORY = addr("factory", 2);
const EXCHANGE = addr("exchange", 1);
const SMALL = addr("small", 1); // funds 3 wallets
const BIG = addr("big", 1); // funds 520 wallets
const EDGE = addr("edge", 1); // funds 499 wallets; one of them funds 3 more
const RICH = addr("rich", 1); // funds 2 traders

let t: TestApp;
let pro: string;
let terminal: string;
const r = () => rows(t.db);

beforeAll(() => {
  t = createTestApp();
  const b = r();
  b.label(FACTORY_CHECKSUMMED.toLowerCase(), "proxy_factory", "Polymarket Proxy Factory");
  b.label(OTHER_FACTORY, "proxy_factory", "Another factory");
  b.label(EXCHANGE, "exchange", "Kraken");
  b.batch(() => {
    for (let i = 1; i <= 3; i++) b.transfer(SMALL, addr("smallm", i * 10), 10 * i, T0 + i * HOUR);
    for (let i = 1; i <= 520; i++) b.transfer(BIG, addr("bigm", i), 5, T0 + i * 60_000);
    for (let i = 1; i <= 499; i++) b.transfer(EDGE, addr("edgem", i), 7, T0 + DAY + i * 60_000);
    for (let i = 1; i <= 3; i++)
      b.transfer(addr("edgem", 1), addr("edgegc", i), 1, T0 + 2 * DAY + i);
    b.transfer(EXCHANGE, RICH, 10_000, T0);
    b.transfer(RICH, addr("richm", 1), 3_000, T0 + DAY);
    b.transfer(RICH, addr("richm", 2), 4_000, T0 + 2 * DAY);
    b.transfer(FACTORY_CHECKSUMMED.toLowerCase(), addr("factorym", 1), 1, T0);
    b.transfer(FACTORY_CHECKSUMMED.toLowerCase(), addr("factorym", 2), 1, T0);
  });
  b.stats({
    address: addr("richm", 1),
    bets: 10,
    resolved: 8,
    wins: 6,
    volume: 5_000,
    pnl: 900,
    last: T0 + 9 * DAY,
  });
  b.stats({
    address: addr("richm", 2),
    bets: 4,
    resolved: 2,
    wins: 0,
    volume: 1_000,
    pnl: -300,
    last: T0 + 5 * DAY,
  });
  const m1 = b.market("crypto");
  const m2 = b.market("crypto");
  b.bet({ wallet: addr("richm", 1), market: m1, category: "crypto", price: 0.5 });
  b.bet({ wallet: addr("richm", 1), market: m2, category: "crypto", price: 0.5 });
  b.bet({ wallet: addr("richm", 2), market: m1, category: "crypto", price: 0.5 });
  refreshFunding(t.db, t.clock.now());
  pro = t.key("terminal_pro");
  terminal = t.key("terminal");
});
afterAll(() => t.close());

async function json(path: string, key = pro) {
  const res = await t.get(path, key);
  const body = (await res.json()) as Record<string, any>;
  if (res.status === 200) {
    const schema = path.includes("/by-id/")
      ? ClusterDetailSchema
      : path.endsWith("/graph")
        ? ClusterGraphSchema
        : SybilClustersSchema;
    expect(v.safeParse(schema, body).issues).toBeUndefined();
  }
  return { status: res.status, body };
}

describe("cluster ids", () => {
  it("are clu_ + the lowest member and stay put when a higher address joins", async () => {
    const before = await json(`/v1/clusters/by-id/clu_${addr("smallm", 10)}`);
    expect(before.status).toBe(200);
    expect(before.body.cluster_stats.member_count).toBe(3);
    r().transfer(SMALL, addr("smallm", 40), 1, T0 + 5 * HOUR);
    const summary = refreshFunding(t.db, t.clock.now());
    expect(summary.transfer_graph).toBe("rebuilt");
    const after = await json(`/v1/clusters/by-id/clu_${addr("smallm", 10)}`);
    expect(after.body.cluster_stats.member_count).toBe(4);
    refreshFunding(t.db, t.clock.now(), { force: true });
    expect((await json(`/v1/clusters/by-id/clu_${addr("smallm", 10)}`)).body.members_total).toBe(5);
  });

  it("follow the lowest member when a lower address joins", async () => {
    r().transfer(SMALL, addr("smallm", 5), 1, T0 + 6 * HOUR);
    refreshFunding(t.db, t.clock.now());
    expect((await json(`/v1/clusters/by-id/clu_${addr("smallm", 10)}`)).status).toBe(404);
    const moved = await json(`/v1/clusters/by-id/clu_${addr("smallm", 5)}`);
    expect(moved.body.cluster_stats).toMatchObject({ funder: SMALL, member_count: 5 });
  });
});

describe("GET /v1/clusters/by-id/{id}", () => {
  it("serves the stats from the members' wallet stats, the funder first", async () => {
    const { status, body } = await json(`/v1/clusters/by-id/clu_${addr("richm", 1)}`, terminal);
    expect(status).toBe(200);
    expect(body).toEqual({
      id: `clu_${addr("richm", 1)}`,
      cluster_stats: {
        funder: RICH,
        member_count: 2,
        total_volume: 6_000,
        total_pnl: 600,
        win_rate: 0.6,
        markets_traded: 2,
        first_funded_at: new Date(T0 + DAY).toISOString(),
        last_active_at: new Date(T0 + 9 * DAY).toISOString(),
      },
      members: [
        { wallet: RICH, role: "funder" },
        { wallet: addr("richm", 1), role: "member" },
        { wallet: addr("richm", 2), role: "member" },
      ],
      members_total: 3,
    });
  });

  it("leaves stats null when no member traded", async () => {
    const { body } = await json(`/v1/clusters/by-id/clu_${addr("edgem", 1)}`);
    expect(body.cluster_stats).toMatchObject({
      total_volume: null,
      total_pnl: null,
      win_rate: null,
      markets_traded: null,
      last_active_at: null,
    });
  });

  it("caps members at 500 and gives the full count", async () => {
    const { body } = await json(`/v1/clusters/by-id/clu_${addr("bigm", 1)}`);
    expect(body.cluster_stats.member_count).toBe(520);
    expect(body.members).toHaveLength(500);
    expect(body.members_total).toBe(521);
    expect(body.members[0]).toEqual({ wallet: BIG, role: "funder" });
    expect(new Set(body.members.map((m: any) => m.wallet)).size).toBe(500);
  });

  it.each([
    ["foo", 400],
    [`clu_${addr("bigm", 1).toUpperCase().replace("0X", "0x")}`, 400],
    [`clu_${addr("bigm", 1)}0`, 400],
    [addr("bigm", 1), 400],
    [`clu_${addr("nobody", 1)}`, 404],
  ])("answers %s with %i", async (id, status) => {
    const res = await json(`/v1/clusters/by-id/${id}`);
    expect(res.status).toBe(status);
    expect(res.body.error.code).toBe(status === 400 ? "bad_request" : "not_found");
  });

  it("needs the terminal tier", async () => {
    expect((await json(`/v1/clusters/by-id/clu_${addr("bigm", 1)}`, t.key("free"))).status).toBe(
      403,
    );
  });
});

describe("GET /v1/clusters/sybil", () => {
  it("lists clusters by member count by default, and by volume or PnL with nulls last", async () => {
    const members = await json("/v1/clusters/sybil");
    expect(members.status).toBe(200);
    expect(Object.keys(members.body)).toEqual(["clusters"]);
    const funders = members.body.clusters.map((c: any) => c.funder);
    expect(funders).toEqual([BIG, EDGE, SMALL, addr("edgem", 1), RICH]);
    expect(members.body.clusters[0]).toEqual({
      id: `clu_${addr("bigm", 1)}`,
      funder: BIG,
      member_count: 520,
      total_volume: null,
      total_pnl: null,
      win_rate: null,
      markets_traded: null,
      first_funded_at: new Date(T0 + 60_000).toISOString(),
      last_active_at: null,
    });
    const volume = await json("/v1/clusters/sybil?sort=volume&limit=2");
    expect(volume.body.clusters.map((c: any) => c.funder)).toEqual([RICH, BIG]);
    const pnl = await json("/v1/clusters/sybil?sort=pnl&limit=1");
    expect(pnl.body.clusters.map((c: any) => c.funder)).toEqual([RICH]);
    expect((await json("/v1/clusters/sybil?limit=200")).status).toBe(200);
  });

  it("does not count labelled senders as funders", async () => {
    const { body } = await json("/v1/clusters/sybil?limit=200");
    const funders = body.clusters.map((c: any) => c.funder);
    expect(funders).not.toContain(FACTORY_CHECKSUMMED.toLowerCase());
    expect(funders).not.toContain(EXCHANGE);
  });

  it.each(["limit=0", "limit=201", "limit=1.5", "sort=size", "sort=MEMBERS"])(
    "400 for %s",
    async (query) => {
      const res = await json(`/v1/clusters/sybil?${query}`);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe("bad_request");
    },
  );

  it("serves a kept list until a refresh lands, then the new clusters", async () => {
    const before = await json("/v1/clusters/sybil?limit=200");
    const newcomer = addr("newcomer", 1);
    r().batch(() => {
      for (let i = 1; i <= 2; i++) r().transfer(newcomer, addr("newm", i), 1, T0 + 3 * DAY + i);
    });
    refreshFunding(t.db, t.clock.now());
    // The funding graph has the new cluster, but no refresh run was announced yet.
    expect(await json("/v1/clusters/sybil?limit=200")).toEqual(before);
    t.app.readModelsChanged();
    const after = await json("/v1/clusters/sybil?limit=200");
    expect(after.body.clusters.map((c: any) => c.funder)).toContain(newcomer);
    expect(after.body.clusters).toHaveLength(before.body.clusters.length + 1);
  });

  it("needs the terminal_pro tier", async () => {
    const res = await json("/v1/clusters/sybil", terminal);
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe("forbidden");
  });
});

describe("GET /v1/clusters/{funder}/graph", () => {
  it("serves the funder and its funded wallets with their stats and funding edges", async () => {
    const { status, body } = await json(`/v1/clusters/${RICH}/graph`);
    expect(status).toBe(200);
    expect(body).toEqual({
      funder: RICH,
      node_count: 3,
      truncated: false,
      nodes: [
        {
          address: RICH,
          role: "funder",
          total_volume: null,
          total_pnl: null,
          win_rate: null,
          funded_amount: 10_000,
          funded_at: new Date(T0).toISOString(),
        },
        {
          address: addr("richm", 1),
          role: "proxy",
          total_volume: 5_000,
          total_pnl: 900,
          win_rate: 0.75,
          funded_amount: 3_000,
          funded_at: new Date(T0 + DAY).toISOString(),
        },
        {
          address: addr("richm", 2),
          role: "proxy",
          total_volume: 1_000,
          total_pnl: -300,
          win_rate: 0,
          funded_amount: 4_000,
          funded_at: new Date(T0 + 2 * DAY).toISOString(),
        },
      ],
      edges: [
        {
          from: RICH,
          to: addr("richm", 1),
          amount: 3_000,
          timestamp: new Date(T0 + DAY).toISOString(),
        },
        {
          from: RICH,
          to: addr("richm", 2),
          amount: 4_000,
          timestamp: new Date(T0 + 2 * DAY).toISOString(),
        },
      ],
    });
  });

  it("caps the graph at 500 nodes and says it was truncated", async () => {
    const { status, body } = await json(`/v1/clusters/${EDGE}/graph`);
    expect(status).toBe(200);
    expect(body.nodes).toHaveLength(500);
    expect(body.node_count).toBe(500);
    expect(body.truncated).toBe(true);
    expect(body.edges).toHaveLength(499);
    expect(new Set(body.nodes.map((n: any) => n.address)).size).toBe(500);
  });

  it("follows funding a level down when there is room", async () => {
    const { body } = await json(`/v1/clusters/${addr("edgem", 1)}/graph`);
    expect(body.truncated).toBe(false);
    expect(body.nodes.map((n: any) => n.role)).toEqual(["funder", "proxy", "proxy", "proxy"]);
    expect(body.nodes[0].funded_amount).toBe(7);
  });

  it.each([
    [FACTORY_CHECKSUMMED, "proxy wallet factory"],
    [FACTORY_CHECKSUMMED.toLowerCase(), "proxy wallet factory"],
    [OTHER_FACTORY, "proxy wallet factory"],
    [BIG, "500 or more wallets"],
    ["0x1234", "funder must be an address"],
  ])("400 for %s", async (funder, message) => {
    const res = await json(`/v1/clusters/${funder}/graph`);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("bad_request");
    expect(res.body.error.message).toContain(message);
  });

  it("404 for an address that funds nobody, labelled or not", async () => {
    for (const funder of [EXCHANGE, addr("nobody", 1), addr("richm", 1)]) {
      const res = await json(`/v1/clusters/${funder}/graph`);
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe("not_found");
    }
    const exchange = await json(`/v1/clusters/${EXCHANGE}/graph`);
    expect(exchange.body.error.message).toContain("labelled exchange Kraken");
  });

  it("needs the terminal_pro tier", async () => {
    expect((await json(`/v1/clusters/${RICH}/graph`, terminal)).status).toBe(403);
  });
});

describe("clusterOf", () => {
  it("gives a member's cluster, a funder's cluster, or null", () => {
    expect(t.app.funding.clusterOf(addr("richm", 2).toUpperCase().replace("0X", "0x"))).toEqual({
      id: `clu_${addr("richm", 1)}`,
      role: "member",
      member_count: 2,
    });
    expect(t.app.funding.clusterOf(RICH)).toEqual({
      id: `clu_${addr("richm", 1)}`,
      role: "funder",
      member_count: 2,
    });
    // Both a member (of EDGE's cluster) and a funder: its membership wins.
    expect(t.app.funding.clusterOf(addr("edgem", 1))?.role).toBe("member");
    expect(t.app.funding.clusterOf(EXCHANGE)).toBeNull();
  });
});

describe("OpenAPI", () => {
  it("documents every funding-graph and investigation path with its errors", async () => {
    const res = await t.get("/v1/openapi.json");
    const doc = (await res.json()) as { paths: Record<string, Record<string, any>> };
    const expected: Record<string, string[]> = {
      "/v1/wallets/{address}/connections": ["200", "400", "401", "403", "429", "500", "503"],
      "/v1/clusters/sybil": ["200", "400", "401", "403", "429", "500", "503"],
      "/v1/clusters/by-id/{id}": ["200", "400", "401", "403", "404", "429", "500", "503"],
      "/v1/clusters/{funder}/graph": ["200", "400", "401", "403", "404", "429", "500", "503"],
      "/v1/investigations": ["200", "400", "401", "403", "429", "500", "503"],
      "/v1/investigations/{id}": ["200", "400", "401", "403", "404", "429", "500", "503"],
    };
    for (const [path, statuses] of Object.entries(expected)) {
      expect(Object.keys(doc.paths[path]?.get?.responses ?? {}).sort()).toEqual(statuses);
    }
  });
});

describe("rebuilding only the clusters of changed wallets", () => {
  it("gives the rows a whole rebuild gives, and leaves other clusters alone", () => {
    const table = () =>
      t.db.writer.prepare("SELECT * FROM sybil_clusters ORDER BY id").all() as Record<
        string,
        unknown
      >[];
    const rich = addr("richm", 2);
    const b = r();
    const m3 = b.market("crypto");
    b.bet({ wallet: rich, market: m3, category: "crypto", price: 0.4 });
    b.stats({ address: rich, bets: 5, resolved: 3, wins: 1, volume: 1_700, pnl: -120, last: T0 });
    const before = table();
    rebuildClusters(t.db.writer, new Set([rich]));
    const partial = table();
    rebuildClusters(t.db.writer);
    expect(partial).toEqual(table());
    const changed = partial.filter(
      (row) => JSON.stringify(row) !== JSON.stringify(before.find((old) => old.id === row.id)),
    );
    expect(changed.map((row) => row.funder)).toEqual([RICH]);
    expect(changed[0]).toMatchObject({ total_volume: 6_700, markets_traded: 3 });
  });
});
