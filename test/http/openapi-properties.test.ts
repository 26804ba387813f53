import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_TRADE_WINDOW_DAYS } from "../../src/read/trades";
import { arbitraryOf, type JsonSchema } from "../helpers/schema-arbitrary";
import { NOW, type SeededWorld, seededWorld } from "../mcp/world";

/**
 * Requests drawn from the served OpenAPI document alone: every parameter and body the document
 * allows, with values the document allows. The server must accept each (no 400) and answer
 * only what the document lists; the contract check in test/helpers/app.ts validates every
 * status and body against the document. Bounded: RUNS requests per operation, a fixed seed
 * (FC_SEED and FC_RUNS override them to explore).
 */
const RUNS = Number(process.env.FC_RUNS ?? 12);
const SEED = Number(process.env.FC_SEED ?? 20261125);
const DAY = 86_400_000;

interface Parameter {
  in: "path" | "query";
  name: string;
  required?: boolean;
  schema: JsonSchema;
}
interface Operation {
  description?: string;
  parameters?: Parameter[];
  requestBody?: { content: { "application/json": { schema: JsonSchema } } };
}
interface Draw {
  path: Record<string, unknown>;
  query: Record<string, unknown>;
  body?: unknown;
}

let w: SeededWorld;
let paths: Record<string, Record<string, Operation>>;
/** Values of path parameters that exist in the seeded world, so 200s are drawn too. */
let known: Record<string, string[]>;

beforeAll(async () => {
  w = await seededWorld();
  const doc = (await (await w.t.raw("/v1/openapi.json")).json()) as { paths: typeof paths };
  paths = doc.paths;
  const r = w.t.db.reader;
  const column = (sql: string) => (r.prepare(sql).all() as { v: string }[]).map((row) => row.v);
  known = {
    address: [
      ...w.manifest.planted.whales.slice(0, 3),
      ...column("SELECT address AS v FROM wallets LIMIT 3"),
    ],
    slug: column("SELECT slug AS v FROM markets ORDER BY id LIMIT 4"),
    txHash: column("SELECT tx_hash AS v FROM trades ORDER BY id LIMIT 3"),
    funder: column("SELECT funder AS v FROM sybil_clusters LIMIT 3"),
  };
}, 120_000);
afterAll(() => w?.t.close());

/**
 * Rules between parameters, which JSON Schema cannot state: each is the operation's own
 * description, checked to say so, and each maps a draw into the space that description allows.
 */
const BETWEEN_PARAMETERS: Record<string, { says: string; apply(d: Draw): void }> = {
  "GET /v1/trades": {
    says: `Needs wallet, market, or a start+end window of at most ${MAX_TRADE_WINDOW_DAYS} days.`,
    apply(d) {
      const q = d.query;
      const { start, end } = q;
      if (start === undefined || end === undefined) {
        delete q.start;
        delete q.end;
      } else {
        // A window: keep start, and end within the allowed span after it.
        const from = instantMs(String(start));
        const span = Math.abs(instantMs(String(end)) - from) % (MAX_TRADE_WINDOW_DAYS * DAY);
        q.end = String(from + span); // Unix milliseconds: past year 9999 too
      }
      if (q.wallet === undefined && q.market === undefined && q.start === undefined) {
        q.wallet = known.address![0];
      }
    },
  },
};

function instantMs(text: string): number {
  return /^\d+$/.test(text)
    ? Number(text)
    : Date.parse(text.length === 10 ? `${text}T00:00:00Z` : text);
}

function drawOf(operation: Operation): fc.Arbitrary<Draw> {
  const params = (operation.parameters ?? []).filter(
    // The cursor is opaque: only the server's own next_cursor is a value its description allows.
    (p) => p.name !== "cursor",
  );
  const part = (where: Parameter["in"]) => {
    const list = params.filter((p) => p.in === where);
    return fc.record(
      Object.fromEntries(
        list.map((p) => {
          const fromSchema = arbitraryOf(p.schema);
          const pool = where === "path" ? known[p.name] : undefined;
          return [
            p.name,
            pool?.length ? fc.oneof(fromSchema, fc.constantFrom(...pool)) : fromSchema,
          ];
        }),
      ),
      { requiredKeys: list.filter((p) => p.required).map((p) => p.name) },
    );
  };
  const body = operation.requestBody?.content["application/json"].schema;
  return fc.record({
    path: part("path"),
    query: part("query"),
    ...(body ? { body: arbitraryOf(body) } : {}),
  }) as fc.Arbitrary<Draw>;
}

function urlOf(template: string, draw: Draw): string {
  const path = template.replace(/\{(\w+)\}/g, (_, name: string) =>
    encodeURIComponent(String(draw.path[name])),
  );
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(draw.query)) query.set(name, String(value));
  const text = query.toString();
  return text ? `${path}?${text}` : path;
}

describe("requests generated from the OpenAPI document", () => {
  it("the rules between parameters are the ones the descriptions state", () => {
    for (const [key, rule] of Object.entries(BETWEEN_PARAMETERS)) {
      const [method, path] = key.split(" ") as [string, string];
      expect(paths[path]![method.toLowerCase()]!.description).toContain(rule.says);
    }
  });

  it(`are all accepted and answered as documented (${RUNS} per operation)`, async () => {
    w.t.clock.set(NOW);
    const operations = Object.entries(paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, operation]) => ({ path, method, operation })),
    );
    expect(operations.length).toBeGreaterThan(30);
    let sent = 0;
    for (const { path, method, operation } of operations) {
      const rule = BETWEEN_PARAMETERS[`${method.toUpperCase()} ${path}`];
      await fc.assert(
        fc.asyncProperty(drawOf(operation), async (draw) => {
          rule?.apply(draw);
          // A fresh account per request: quotas and the webhook cap are not what is tested.
          const key = w.t.key("terminal_pro");
          const url = urlOf(path, draw);
          const res = await w.t.get(url, key, {
            method: method.toUpperCase(),
            ...(draw.body === undefined
              ? {}
              : {
                  body: JSON.stringify(draw.body),
                  headers: { "content-type": "application/json" },
                }),
          });
          sent += 1;
          const text = await res.text();
          expect(
            res.status,
            `${method.toUpperCase()} ${url} ${JSON.stringify(draw.body ?? null)}: ${text}`,
          ).not.toBe(400);
          expect(res.status, `${method.toUpperCase()} ${url}: ${text}`).toBeLessThan(500);
        }),
        { numRuns: RUNS, seed: SEED, endOnFailure: true },
      );
    }
    expect(sent).toBe(operations.length * RUNS);
  }, 120_000);
});
