import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import type { Hono } from "hono";

interface OpenApiDoc {
  paths: Record<string, Record<string, { responses?: Record<string, ResponseSpec> }>>;
  components?: Record<string, unknown>;
}
interface ResponseSpec {
  content?: { "application/json"?: { schema?: object } };
}

/** A document's routes and compiled validators, shared by every app that serves the same text. */
interface Compiled {
  doc: OpenApiDoc;
  routes: { method: string; pattern: RegExp; path: string; specificity: number }[];
  ajv: Ajv2020;
  validators: Map<string, ValidateFunction>;
}

/**
 * Keyed by the document's text: the suite builds hundreds of apps that serve the same document,
 * and compiling its schemas again for each cost more than many of the tests that use them.
 */
const byDocument = new Map<string, Compiled>();

function compile(text: string): Compiled {
  const known = byDocument.get(text);
  if (known) return known;
  const doc = JSON.parse(text) as OpenApiDoc;
  const routes = Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.keys(methods).map((method) => ({
      method: method.toUpperCase(),
      path,
      // Literal segments beat parameters: /wallets/search before /wallets/{address}.
      specificity: path.split("/").filter((s) => !s.startsWith("{")).length,
      pattern: new RegExp(`^${path.replace(/\{[^}]+\}/g, "[^/]+")}$`),
    })),
  );
  routes.sort((a, b) => b.specificity - a.specificity);
  const ajv = new Ajv2020({ strict: false, allErrors: false });
  (addFormats as unknown as (a: Ajv2020) => void)(ajv);
  const compiled = { doc, routes, ajv, validators: new Map<string, ValidateFunction>() };
  byDocument.set(text, compiled);
  return compiled;
}

/**
 * The contract check every in-process request of the suite goes through (test/helpers/app.ts):
 * the route and status must be documented in /v1/openapi.json and a JSON body must validate
 * against the schema documented for that status. The document describes what is served, or a
 * test fails.
 */
export function createContract(http: Hono<any>) {
  // Read once per app, however many requests are checked at the same time.
  let loading: Promise<Compiled> | undefined;
  const load = (): Promise<Compiled> => {
    loading ??= (async () => compile(await (await http.request("/v1/openapi.json")).text()))();
    return loading;
  };

  return async function check(method: string, url: string, res: Response): Promise<void> {
    const path = new URL(url, "http://x").pathname;
    if (!path.startsWith("/v1/") || path === "/v1/openapi.json") return;
    const { doc: spec, routes, ajv, validators: compiled } = await load();
    const route = routes.find((r) => r.method === method && r.pattern.test(path));
    // An unknown route or method answers the router's own 404 (or 413 for a body too large to
    // read): the error envelope, which needs no documented route.
    if (!route) {
      if (res.status !== 404 && res.status !== 413) {
        throw new Error(
          `contract: ${method} ${path} answered ${res.status} but is not in the OpenAPI document`,
        );
      }
      const body = (await res.clone().json()) as {
        error?: { code?: unknown; message?: unknown; request_id?: unknown };
      };
      const e = body.error;
      if (
        !e ||
        typeof e.code !== "string" ||
        typeof e.message !== "string" ||
        typeof e.request_id !== "string"
      ) {
        throw new Error(`contract: ${method} ${path} ${res.status} is not the error envelope`);
      }
      return;
    }
    const responses = spec.paths[route.path]![method.toLowerCase()]!.responses ?? {};
    const documented = responses[String(res.status)] ?? responses.default;
    if (!documented) {
      throw new Error(
        `contract: ${method} ${route.path} answered ${res.status}, which its OpenAPI entry does not document (documents ${Object.keys(responses).join(", ")})`,
      );
    }
    const schema = documented.content?.["application/json"]?.schema;
    if (!schema || res.status === 204) return;
    const key = `${method} ${route.path} ${res.status}`;
    let validate = compiled.get(key);
    if (!validate) {
      validate = ajv.compile({ ...schema, components: spec.components });
      compiled.set(key, validate);
    }
    const body = await res.clone().json();
    if (!validate(body)) {
      throw new Error(
        `contract: ${key} body does not match its OpenAPI schema: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(body).slice(0, 500)}`,
      );
    }
  };
}
