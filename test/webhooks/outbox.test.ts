import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Channel, NewEndpoint } from "../../src/webhooks/endpoints";
import { createTestApp, type TestApp } from "../helpers/app";
import { accountWithKey, seedMarkets, signalOn, WALLET_A, WALLET_B, WALLET_C } from "./world";

let t: TestApp;
const ids: Record<string, string> = {};

function endpoint(
  name: string,
  accountId: number,
  channel: Channel,
  filters: Partial<NewEndpoint> = {},
) {
  const created = t.app.webhooks.endpoints.create({
    accountId,
    tier: "terminal",
    channel,
    callbackUrl: `https://hooks.example.com/${name}`,
    ...filters,
  });
  if (!created.ok) throw new Error(created.reason);
  ids[name] = created.value.endpoint.id;
}

/** Which endpoints (by test name) got a delivery of the signal, with event and followedVia. */
function routed(signalId: number): Record<string, string> {
  const byId = new Map(Object.entries(ids).map(([name, id]) => [id, name]));
  const rows = t.db.writer
    .prepare("SELECT endpoint_id, event, followed_via FROM deliveries WHERE signal_id = ?")
    .all(signalId) as { endpoint_id: string; event: string; followed_via: string | null }[];
  return Object.fromEntries(
    rows.map((r) => [
      byId.get(r.endpoint_id),
      r.followed_via ? `${r.event} via ${r.followed_via}` : r.event,
    ]),
  );
}

beforeAll(() => {
  t = createTestApp();
  seedMarkets(t);
  const f = t.app.webhooks.follows;
  const api = accountWithKey(t, "api-customer").id;
  endpoint("all", api, "api");
  endpoint("min80", api, "api", { minScore: 80 });
  endpoint("insider", api, "api", { scoreType: "insider" });
  endpoint("crypto", api, "api", { category: "Crypto" });
  endpoint("politicsWhale70", accountWithKey(t, "api-2").id, "api", {
    category: "politics",
    scoreType: "whale",
    minScore: 70,
  });
  const gone = accountWithKey(t, "api-3").id;
  endpoint("removed", gone, "api");
  t.app.webhooks.endpoints.remove(ids.removed!);

  for (const list of ["smart", "a-list", "b-list", "only-b"]) f.createList(list, null);
  f.addToList("smart", [WALLET_A]);
  f.addToList("a-list", [WALLET_A.toUpperCase().replace("0X", "0x")]);
  f.addToList("b-list", [WALLET_A, WALLET_B]);
  f.addToList("only-b", [WALLET_B]);

  const direct = accountWithKey(t, "direct").id;
  f.followWallet(direct, WALLET_A);
  endpoint("direct", direct, "dashboard");
  // Follows by list also earn this account's API endpoint nothing beyond its filters.
  const viaList = accountWithKey(t, "via-list").id;
  f.followList(viaList, "smart");
  endpoint("viaList", viaList, "dashboard");
  const both = accountWithKey(t, "both").id;
  f.followWallet(both, WALLET_A);
  f.followList(both, "smart");
  endpoint("both", both, "dashboard");
  const twoLists = accountWithKey(t, "two-lists").id;
  f.followList(twoLists, "b-list");
  f.followList(twoLists, "a-list");
  endpoint("twoLists", twoLists, "dashboard");
  const onlyB = accountWithKey(t, "only-b").id;
  f.followList(onlyB, "only-b");
  endpoint("onlyB", onlyB, "dashboard");
  const nobody = accountWithKey(t, "follows-nothing").id;
  endpoint("followsNothing", nobody, "dashboard");
  // An API endpoint of a following account: the follow does not route signals to it.
  endpoint("directApi", direct, "api", { category: "economics" });
});
afterAll(() => t.close());

describe("enqueueSignal routes each signal to exactly the interested endpoints", () => {
  it("a whale signal (72, politics) on a followed wallet", () => {
    const { signalId, created, deliveries } = t.app.webhooks.outbox.enqueueSignal(
      signalOn(t, { wallet: WALLET_A, marketId: 1, type: "whale", score: 72 }),
    );
    expect(created).toBe(true);
    expect(routed(signalId)).toEqual({
      all: "signal.whale",
      politicsWhale70: "signal.whale",
      direct: "alert.followed_wallet via wallet",
      viaList: "alert.followed_wallet via list:smart",
      both: "alert.followed_wallet via wallet",
      twoLists: "alert.followed_wallet via list:a-list",
    });
    expect(deliveries).toBe(6);
  });

  it("an insider signal (85, crypto) on another wallet; category matches case-insensitively", () => {
    const { signalId } = t.app.webhooks.outbox.enqueueSignal(
      signalOn(t, { wallet: WALLET_B, marketId: 2, type: "insider", score: 85 }),
    );
    expect(routed(signalId)).toEqual({
      all: "signal.insider",
      min80: "signal.insider",
      insider: "signal.insider",
      crypto: "signal.insider",
      twoLists: "alert.followed_wallet via list:b-list",
      onlyB: "alert.followed_wallet via list:only-b",
    });
  });

  it("min_score is inclusive and a wallet nobody follows alerts nobody", () => {
    const { signalId } = t.app.webhooks.outbox.enqueueSignal(
      signalOn(t, { wallet: WALLET_C, marketId: 2, type: "whale", score: 80 }),
    );
    expect(routed(signalId)).toEqual({
      all: "signal.whale",
      min80: "signal.whale",
      crypto: "signal.whale",
    });
  });

  it("writes one delivery per (signal, endpoint) however often it is enqueued", () => {
    const signal = signalOn(t, { wallet: WALLET_A, score: 90 });
    const first = t.app.webhooks.outbox.enqueueSignal(signal);
    const again = t.app.webhooks.outbox.enqueueSignal(signal);
    expect(again).toEqual({ signalId: first.signalId, created: false, deliveries: 0 });
    const count = t.db.writer
      .prepare(
        "SELECT count(*) AS n, count(DISTINCT endpoint_id) AS endpoints FROM deliveries WHERE signal_id = ?",
      )
      .get(first.signalId) as { n: number; endpoints: number };
    expect(count.n).toBe(first.deliveries);
    expect(count.endpoints).toBe(first.deliveries);
    // The database itself refuses a second row for the pair.
    const row = t.db.writer
      .prepare("SELECT endpoint_id FROM deliveries WHERE signal_id = ? LIMIT 1")
      .get(first.signalId) as { endpoint_id: string };
    expect(() =>
      t.db.writer
        .prepare(
          "INSERT INTO deliveries (id, signal_id, endpoint_id, event, status, created_at) VALUES ('dlv_dup', ?, ?, 'signal.whale', 'pending', 0)",
        )
        .run(first.signalId, row.endpoint_id),
    ).toThrow(/UNIQUE/);
  });

  it("commits the signal and its deliveries with the caller's transaction, or neither", () => {
    const signal = signalOn(t, { wallet: WALLET_A });
    const before = t.db.writer.prepare("SELECT count(*) AS n FROM deliveries").get() as {
      n: number;
    };
    expect(() =>
      t.db.writer.transaction(() => {
        t.app.webhooks.outbox.enqueueSignal(signal);
        throw new Error("ingest failed after detection");
      })(),
    ).toThrow("ingest failed");
    const signals = t.db.writer
      .prepare("SELECT count(*) AS n FROM signals WHERE trade_id = ?")
      .get(signal.tradeId) as { n: number };
    expect(signals.n).toBe(0);
    expect(t.db.writer.prepare("SELECT count(*) AS n FROM deliveries").get()).toEqual(before);
  });

  it("stops routing to an unfollowed wallet and a list member removed", () => {
    const f = t.app.webhooks.follows;
    const direct = t.app.accounts.get("direct")!.id;
    expect(f.unfollowWallet(direct, WALLET_A)).toEqual({ ok: true, value: { removed: true } });
    expect(f.removeFromList("smart", [WALLET_A])).toEqual({ ok: true, value: { changed: 1 } });
    const { signalId } = t.app.webhooks.outbox.enqueueSignal(
      signalOn(t, { wallet: WALLET_A, score: 60 }),
    );
    expect(routed(signalId)).toEqual({
      all: "signal.whale",
      both: "alert.followed_wallet via wallet",
      twoLists: "alert.followed_wallet via list:a-list",
    });
  });
});

describe("follows and lists", () => {
  it("validate addresses and slugs and refuse unknown lists", () => {
    const f = t.app.webhooks.follows;
    const id = t.app.accounts.get("direct")!.id;
    expect(f.followWallet(id, "0x123")).toMatchObject({ ok: false });
    expect(f.followList(id, "no-such-list")).toEqual({
      ok: false,
      reason: 'no list "no-such-list"',
    });
    expect(f.createList("Bad Slug", null)).toMatchObject({ ok: false });
    expect(f.createList("smart", null)).toEqual({
      ok: false,
      reason: 'list "smart" already exists',
    });
    // One bad address refuses the whole change.
    expect(f.addToList("only-b", [WALLET_C, "nope"])).toMatchObject({ ok: false });
    expect(f.members("only-b")).toEqual({ ok: true, value: [WALLET_B] });
  });
});
