import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSender } from "../../src/webhooks/sender";
import { createGuardedDispatcher } from "../../src/webhooks/ssrf";
import { createTestApp, type TestApp } from "../helpers/app";

/**
 * A callback whose name the operator's DNS resolves to an internal address: the customer (the
 * Test action's answer, a delivery's last_error) is told only that the target is refused; what
 * the name resolved to goes to the server log.
 */
let t: TestApp;
beforeAll(() => {
  t = createTestApp();
});
afterAll(() => t.close());

describe("blocked targets", () => {
  it("tell the customer a generic reason and log the resolution", async () => {
    const { app } = t;
    const account = app.accounts.create("internal-dns", "terminal");
    if (!account.ok) throw new Error(account.reason);
    const created = app.webhooks.endpoints.create({
      accountId: account.value.id,
      tier: "terminal",
      channel: "api",
      callbackUrl: "https://build.corp.example.com/hook",
      minScore: null,
      scoreType: null,
      category: null,
    });
    if (!created.ok) throw new Error(created.reason);
    const dispatcher = createGuardedDispatcher({
      allowPrivate: false,
      timeoutMs: 5_000,
      resolve: async () => [{ address: "10.20.30.40", family: 4 }],
    });
    const sender = createSender({
      config: t.config,
      clock: t.clock,
      endpoints: app.webhooks.endpoints,
      store: app.webhooks.deliveries,
      dispatcher,
      log: app.deps.log,
    });
    try {
      const outcome = await sender.sendTest(created.value.endpoint);
      expect(outcome).toMatchObject({ ok: false, retryable: false });
      expect(outcome.error).toBe("blocked: callback_url host resolves to a non-public address");
      expect(JSON.stringify(outcome)).not.toContain("10.20.30.40");
      const line = t.logs.find((l) => l.msg === "webhook target blocked");
      expect(line).toMatchObject({ endpoint_id: created.value.endpoint.id });
      expect(String(line?.detail)).toContain("private address 10.20.30.40");
    } finally {
      await dispatcher.close();
    }
  });
});
