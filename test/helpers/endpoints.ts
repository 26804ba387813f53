import type { TestApp } from "./app";

/**
 * An account on `terminal` with one API-channel endpoint and no filter: it takes every signal,
 * so a test counts deliveries against signals. Its URL is never called (the drainer does not run
 * in these tests); the app needs SMARTMONEY_WEBHOOK_ALLOW_PRIVATE=1 to accept the default one.
 */
export function catchAllEndpoint(
  t: TestApp,
  account = "alerts",
  callbackUrl = "http://127.0.0.1:9/hook",
): string {
  const created = t.app.accounts.create(account, "terminal");
  if (!created.ok) throw new Error(created.reason);
  const endpoint = t.app.webhooks.endpoints.create({
    accountId: created.value.id,
    tier: "terminal",
    channel: "api",
    callbackUrl,
    minScore: null,
    scoreType: null,
    category: null,
  });
  if (!endpoint.ok) throw new Error(endpoint.reason);
  return endpoint.value.endpoint.id;
}
