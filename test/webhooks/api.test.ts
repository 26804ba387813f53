import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../helpers/app";
import { seedMarkets, signalOn } from "./world";

let t: TestApp;

beforeAll(() => {
  t = createTestApp();
  seedMarkets(t);
});
afterAll(() => t.close());

type Json = Record<string, any>;

async function call(
  method: string,
  path: string,
  key: string,
  body?: unknown,
  type = "application/json",
) {
  const init: RequestInit = { method };
  if (body !== undefined) {
    init.body = typeof body === "string" ? body : JSON.stringify(body);
    init.headers = { "content-type": type };
  }
  const res = await t.get(path, key, init);
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    text,
    body: (text ? JSON.parse(text) : null) as Json,
  };
}

const create = (key: string, body: unknown) => call("POST", "/v1/webhooks", key, body);

function expectEnvelope(
  res: { status: number; headers: Headers; body: Json },
  status: number,
  code: string,
) {
  expect(res.status).toBe(status);
  expect(Object.keys(res.body)).toEqual(["error"]);
  expect(res.body.error.code).toBe(code);
  expect(res.body.error.request_id).toBe(res.headers.get("x-request-id"));
}

describe("POST /v1/webhooks", () => {
  it("answers 201 with the endpoint and its one-time secret; the list shows it with secret null", async () => {
    const key = t.key("free");
    const res = await create(key, {
      callback_url: "https://hooks.example.com/smartmoney?token=abc",
      min_score: 70,
      score_type: "insider",
      category: "politics",
      unknown_field: "ignored",
    });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body)).toEqual([
      "id",
      "callback_url",
      "min_score",
      "score_type",
      "category",
      "secret",
      "created_at",
    ]);
    expect(res.body).toMatchObject({
      callback_url: "https://hooks.example.com/smartmoney?token=abc",
      min_score: 70,
      score_type: "insider",
      category: "politics",
      created_at: new Date(t.clock.now()).toISOString(),
    });
    expect(res.body.id).toMatch(/^wh_[0-9a-f]{24}$/);
    expect(res.body.secret).toMatch(/^whsec_/);
    expect(res.headers.get("x-ratelimit-remaining")).not.toBeNull();

    const list = await call("GET", "/v1/webhooks", key);
    expect(list.status).toBe(200);
    expect(list.body).toEqual({ data: [{ ...res.body, secret: null }] });
    expect(list.text).not.toContain(res.body.secret);
    // Only ciphertext at rest.
    const stored = JSON.stringify(t.db.writer.prepare("SELECT * FROM webhook_endpoints").all());
    expect(stored).not.toContain(res.body.secret);
  });

  it("treats omitted filters as no constraint (null)", async () => {
    const res = await create(t.key("free"), { callback_url: "https://hooks.example.com/a" });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ min_score: null, score_type: null, category: null });
  });

  const badUrls: [string, string, RegExp][] = [
    ["plain http", "http://hooks.example.com/x", /must use https/],
    ["relative", "/hooks", /absolute URL/],
    ["localhost", "https://localhost/x", /localhost/],
    ["a .local name", "https://printer.local/x", /\.local/],
    ["an .internal name", "https://api.corp.internal/x", /\.internal/],
    ["a loopback literal", "https://127.0.0.1/x", /loopback/],
    ["a private literal", "https://10.1.2.3/x", /private/],
    ["a private IPv6 literal", "https://[fd00::1]/x", /unique local/],
    ["a link-local (metadata) literal", "https://169.254.169.254/latest", /link-local/],
    ["credentials", "https://user:pw@hooks.example.com/x", /credentials/],
    ["not a URL", "not a url", /absolute URL/],
  ];
  it.each(badUrls)("refuses %s with 400 naming the rule", async (_name, url, rule) => {
    const res = await create(t.key("terminal"), { callback_url: url });
    expectEnvelope(res, 400, "bad_request");
    expect(res.body.error.message).toMatch(rule);
  });

  const badBodies: [string, unknown, RegExp][] = [
    ["no callback_url", { min_score: 5 }, /callback_url is required/],
    ["callback_url not a string", { callback_url: 42 }, /callback_url/],
    ["min_score above 100", { callback_url: "https://h.example.com", min_score: 101 }, /min_score/],
    [
      "min_score fractional",
      { callback_url: "https://h.example.com", min_score: 5.5 },
      /min_score/,
    ],
    ["min_score as text", { callback_url: "https://h.example.com", min_score: "5" }, /min_score/],
    [
      "unknown score_type",
      { callback_url: "https://h.example.com", score_type: "retail" },
      /score_type/,
    ],
    ["empty category", { callback_url: "https://h.example.com", category: " " }, /category/],
    ["an array body", [], /JSON object/],
  ];
  it.each(badBodies)("refuses %s with 400", async (_name, body, rule) => {
    const res = await create(t.key("terminal"), body);
    expectEnvelope(res, 400, "bad_request");
    expect(res.body.error.message).toMatch(rule);
  });

  it("refuses malformed JSON, a non-JSON Content-Type and a body over 64 KiB", async () => {
    const key = t.key("terminal");
    const malformed = await call("POST", "/v1/webhooks", key, '{"callback_url": ');
    expectEnvelope(malformed, 400, "bad_request");
    const form = await call(
      "POST",
      "/v1/webhooks",
      key,
      "callback_url=https://h.example.com",
      "application/x-www-form-urlencoded",
    );
    expectEnvelope(form, 400, "bad_request");
    expect(form.body.error.message).toMatch(/Content-Type must be application\/json/);
    const big = await create(key, {
      callback_url: "https://h.example.com",
      category: "x".repeat(70 * 1024),
    });
    expectEnvelope(big, 413, "bad_request");
    expect(t.app.webhooks.endpoints.list(t.app.accounts.list().at(-1)!.id)).toEqual([]);
  });

  it("caps endpoints per plan with 403 naming the cap (1 on free, 10 on terminal)", async () => {
    const free = t.key("free");
    expect((await create(free, { callback_url: "https://h.example.com/1" })).status).toBe(201);
    const over = await create(free, { callback_url: "https://h.example.com/2" });
    expectEnvelope(over, 403, "forbidden");
    expect(over.body.error.message).toMatch(/free plan allows 1 endpoint/);

    const terminal = t.key("terminal");
    for (let i = 0; i < 10; i++) {
      expect((await create(terminal, { callback_url: `https://h.example.com/${i}` })).status).toBe(
        201,
      );
    }
    const eleventh = await create(terminal, { callback_url: "https://h.example.com/11" });
    expectEnvelope(eleventh, 403, "forbidden");
    expect(eleventh.body.error.message).toMatch(/terminal plan allows 10 endpoints/);

    // Removing one frees a place.
    const { body } = await call("GET", "/v1/webhooks", free);
    expect((await call("DELETE", `/v1/webhooks/${body.data[0].id}`, free)).status).toBe(204);
    expect((await create(free, { callback_url: "https://h.example.com/3" })).status).toBe(201);
  });

  it("does not count the cap's 403 against the rate limit", async () => {
    const free = t.key("free");
    const first = await create(free, { callback_url: "https://h.example.com/counted" });
    expect(first.status).toBe(201);
    expect(first.headers.get("x-ratelimit-remaining")).toBe("49");
    for (let i = 0; i < 3; i++) {
      const over = await create(free, { callback_url: `https://h.example.com/over-${i}` });
      expectEnvelope(over, 403, "forbidden");
      expect(over.headers.get("x-ratelimit-remaining")).toBe("49");
    }
    const list = await call("GET", "/v1/webhooks", free);
    expect(list.headers.get("x-ratelimit-remaining")).toBe("48");
  });
});

describe("DELETE /v1/webhooks/{id}", () => {
  it("answers 204 without a body; a second delete, or another account's id, is 404", async () => {
    const owner = t.key("terminal");
    const stranger = t.key("terminal");
    const { body } = await create(owner, { callback_url: "https://h.example.com/del" });
    const foreign = await call("DELETE", `/v1/webhooks/${body.id}`, stranger);
    expectEnvelope(foreign, 404, "not_found");
    const gone = await call("DELETE", `/v1/webhooks/${body.id}`, owner);
    expect(gone.status).toBe(204);
    expect(gone.text).toBe("");
    expectEnvelope(await call("DELETE", `/v1/webhooks/${body.id}`, owner), 404, "not_found");
    expect((await call("GET", "/v1/webhooks", owner)).body).toEqual({ data: [] });
    expectEnvelope(await call("DELETE", "/v1/webhooks/not-an-id", owner), 400, "bad_request");
  });

  it("ends the removed endpoint's waiting deliveries as dead", async () => {
    const key = t.key("terminal");
    const { body } = await create(key, { callback_url: "https://h.example.com/pending" });
    t.app.webhooks.outbox.enqueueSignal(signalOn(t));
    await call("DELETE", `/v1/webhooks/${body.id}`, key);
    const rows = t.db.writer
      .prepare("SELECT status, last_error FROM deliveries WHERE endpoint_id = ?")
      .all(body.id);
    expect(rows).toEqual([{ status: "dead", last_error: "endpoint removed" }]);
  });
});

describe("GET /v1/webhooks/{id}/deliveries", () => {
  let key: string;
  let id: string;
  beforeAll(async () => {
    key = t.key("terminal");
    id = (await create(key, { callback_url: "https://h.example.com/many", min_score: 50 })).body.id;
    // 7 signals over 7 seconds; the 3rd and 4th share a timestamp (the id breaks the tie).
    for (let i = 0; i < 7; i++) {
      if (i !== 3) t.clock.advance(1000);
      t.app.webhooks.outbox.enqueueSignal(signalOn(t, { score: 60 + i }));
    }
    t.db.writer
      .prepare(
        "UPDATE deliveries SET status = 'dead', next_attempt_at = NULL, attempts = 4, last_error = 'HTTP 500', last_status_code = 500 WHERE endpoint_id = ? AND signal_id % 2 = 0",
      )
      .run(id);
  });

  async function pages(query: string) {
    const rows: Json[] = [];
    let cursor: string | null = null;
    do {
      const res = await call(
        "GET",
        `/v1/webhooks/${id}/deliveries?${query}${cursor ? `&cursor=${cursor}` : ""}`,
        key,
      );
      expect(res.status).toBe(200);
      rows.push(...res.body.data);
      cursor = res.body.next_cursor;
    } while (cursor);
    return rows;
  }

  it("pages newest first, each delivery exactly once, in the Delivery shape", async () => {
    const rows = await pages("limit=2");
    expect(rows).toHaveLength(7);
    expect(new Set(rows.map((r) => r.id)).size).toBe(7);
    const order = rows.map((r) => [Date.parse(r.created_at), r.id] as const);
    const sorted = [...order].sort((a, b) => b[0] - a[0] || (a[1] < b[1] ? 1 : -1));
    expect(order).toEqual(sorted);
    expect(Object.keys(rows[0]!)).toEqual([
      "id",
      "event",
      "signal_id",
      "status",
      "attempts",
      "last_status_code",
      "last_error",
      "next_attempt_at",
      "created_at",
      "delivered_at",
    ]);
    const pending = rows.find((r) => r.status === "pending")!;
    expect(pending).toMatchObject({ event: "signal.whale", attempts: 0, delivered_at: null });
    expect(pending.next_attempt_at).toBe(pending.created_at);
  });

  it("filters by status", async () => {
    const dead = await pages("status=dead&limit=1");
    expect(dead.length).toBeGreaterThan(0);
    expect(dead.every((r) => r.status === "dead" && r.last_status_code === 500)).toBe(true);
    const pending = await pages("status=pending");
    expect(dead.length + pending.length).toBe(7);
  });

  it("refuses a tampered cursor, another filter's cursor and bad parameters with 400", async () => {
    const first = await call("GET", `/v1/webhooks/${id}/deliveries?limit=2`, key);
    const cursor: string = first.body.next_cursor;
    const [body, tag] = cursor.split(".");
    const decoded = JSON.parse(Buffer.from(body!, "base64url").toString());
    decoded[1] += 1;
    const forged = `${Buffer.from(JSON.stringify(decoded)).toString("base64url")}.${tag}`;
    for (const bad of [
      forged,
      "garbage",
      `${cursor.slice(0, -1)}${cursor.endsWith("A") ? "B" : "A"}`,
      `${cursor}x`,
      `${body}x.${tag}`,
    ]) {
      expectEnvelope(
        await call("GET", `/v1/webhooks/${id}/deliveries?cursor=${bad}`, key),
        400,
        "bad_request",
      );
    }
    expectEnvelope(
      await call("GET", `/v1/webhooks/${id}/deliveries?status=dead&cursor=${cursor}`, key),
      400,
      "bad_request",
    );
    expectEnvelope(
      await call("GET", `/v1/webhooks/${id}/deliveries?limit=0`, key),
      400,
      "bad_request",
    );
    expectEnvelope(
      await call("GET", `/v1/webhooks/${id}/deliveries?limit=101`, key),
      400,
      "bad_request",
    );
    expectEnvelope(
      await call("GET", `/v1/webhooks/${id}/deliveries?status=lost`, key),
      400,
      "bad_request",
    );
  });

  it("is 404 for another account's endpoint", async () => {
    expectEnvelope(
      await call("GET", `/v1/webhooks/${id}/deliveries`, t.key("terminal")),
      404,
      "not_found",
    );
  });
});

describe("every webhook call", () => {
  it("needs a key, works on the free tier and is counted", async () => {
    expectEnvelope(await call("GET", "/v1/webhooks", ""), 401, "unauthorized");
    const key = t.key("free");
    const a = await call("GET", "/v1/webhooks", key);
    const b = await call("POST", "/v1/webhooks", key, "{");
    const c = await call("GET", "/v1/webhooks", key);
    const remaining = [a, b, c].map((r) => Number(r.headers.get("x-ratelimit-remaining")));
    expect(remaining).toEqual([49, 48, 47]);
  });

  it("is documented in the OpenAPI document", async () => {
    const res = await t.get("/v1/openapi.json");
    const doc = (await res.json()) as Json;
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        "/v1/webhooks",
        "/v1/webhooks/{id}",
        "/v1/webhooks/{id}/deliveries",
        "/v1/webhooks/{id}/test",
      ]),
    );
    expect(doc.paths["/v1/webhooks"].post.responses["201"]).toBeDefined();
    expect(doc.paths["/v1/webhooks"].post.requestBody).toBeDefined();
  });
});
