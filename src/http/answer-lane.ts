import type { IncomingMessage, ServerResponse } from "node:http";
import type { Context } from "hono";
import { routePath } from "hono/route";
import type { Account, Accounts } from "../auth/accounts";
import { charge, identify, quotaHeaders } from "../auth/admission";
import type { RateDecision, RateLimiter } from "../auth/rate-limit";
import type { Tier } from "../auth/tiers";
import type { Clock } from "../clock";
import type { Log } from "../log";
import type { Freshness } from "../read/freshness";
import type { HttpEnv } from "./env";
import { AGE_HEADER, AS_OF_HEADER, readModelAgeOf } from "./middleware/read-model-age";
import { nextRequestId } from "./middleware/request-id";
import { writeRequestLine } from "./middleware/request-log";

/** What an answer is kept under (answer-cache.ts): a generation, a database version. */
export type Epoch = () => number | string;

/** How many answers the lane keeps: each also sits in its route's answer cache. */
const MAX_LANE_ANSWERS = 1024;
/**
 * Larger answers stay with their route's cache: the lane saves the router's 20–30 µs, which a
 * long answer's socket write dwarfs (a market's detail is up to 70 KB), and it bounds what the
 * lane holds to 32 MB.
 */
const MAX_LANE_BYTES = 32 * 1024;

interface LaneAnswer {
  epoch: Epoch;
  /** The epoch's value when the answer was computed: the answer holds while it stays. */
  at: number | string;
  /**
   * The JSON as a string, not a Buffer: node:http writes a string body in one write together
   * with the head, where a Buffer body goes out as a second chunk through writev. Measured with
   * wrk on a bare node:http server, the string saved 1.5–2 µs of CPU per response, a tenth of
   * the whole (docs/architecture.md, The answer lane).
   */
  body: string;
  /** Its length in bytes, for Content-Length. */
  length: string;
  /** The route's minimum tier, admitted again on every call as the router admits it. */
  minTier: Tier;
  /** The route pattern and path, for the request line. */
  route: string;
  path: string;
}

/**
 * The answer lane: the shortest way to send an answer the router has already computed.
 *
 * Measured on the built binary with wrk (docs/architecture.md, The request path), a kept answer
 * cost the server about 30 µs of CPU beyond what a bare node:http server spends on a response, and
 * most of that was the path itself, not the answer: @hono/node-server's Request and Response
 * wrappers, hono's context and middleware chain, and their promises. Those costs grow faster than
 * linearly under load, so a few microseconds of them halve the requests per second.
 *
 * When a route's answer cache (answer-cache.ts) sends a kept answer to a GET that came over Node,
 * it leaves a copy here, keyed by the raw request target (path and query, exactly as sent) and
 * the caller's tier, the only thing about a caller a kept answer may depend on. A later request
 * for the same target from a caller of the same tier is then answered here, before the router,
 * admitted by the same functions the router's middleware calls, and with the same answer:
 *
 * - the key, the tier gate and the count: auth/admission.ts, identify() and charge(), as
 *   `authenticate` and `access` call them (middleware/auth.ts);
 * - the headers the middleware sets: X-Request-Id, the read models' age, the quota
 *   (quotaHeaders);
 * - the request line in the log, as request-log.ts writes it (writeRequestLine).
 *
 * Anything else goes to the router untouched: another method, no or another key, an answer that
 * no longer holds (its epoch moved on), a refused call (the router refuses it again, and says
 * why; a refusal is not counted, so nothing is counted twice). The lane never answers an error.
 */
export function createAnswerLane(deps: {
  accounts: Accounts;
  limiter: RateLimiter;
  freshness: Freshness;
  clock: Clock;
  log: Log;
}) {
  const { accounts, limiter, log } = deps;
  const ageOf = readModelAgeOf(deps.freshness, deps.clock);
  const answers = new Map<string, LaneAnswer>();
  let served = 0;

  function headersFor(requestId: string, answer: LaneAnswer, decision: RateDecision): string[] {
    const headers = ["X-Request-Id", requestId];
    const age = ageOf(answer.path);
    if (age) headers.push(AS_OF_HEADER, age.asOf, AGE_HEADER, age.age);
    quotaHeaders((name, value) => headers.push(name, value), decision);
    headers.push("Content-Type", "application/json", "Content-Length", answer.length);
    return headers;
  }

  /** The kept answer for this caller and target, with the call counted; or undefined. */
  function admitted(header: string, target: string) {
    const identified = identify(accounts, header, "api");
    if (!identified.ok) return undefined;
    const { account } = identified.caller;
    const answer = answers.get(`${account.tier} ${target}`);
    if (answer === undefined || answer.epoch() !== answer.at) return undefined;
    const charged = charge(limiter, account, answer.minTier);
    // A refusal counts nothing: the router decides again, and says why.
    return charged.ok ? { account, answer, decision: charged.quota } : undefined;
  }

  return {
    /**
     * Keeps a copy of an answer a route's cache sent, if the request came over Node as a GET:
     * in-process requests (tests, app.request()) have no raw target to key it by.
     */
    remember(c: Context<HttpEnv>, epoch: Epoch, at: number | string, body: string): void {
      const target = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming?.url;
      const caller = c.get("caller");
      const minTier = c.get("minTier");
      if (target === undefined || c.req.method !== "GET" || caller === undefined) return;
      // Only an answer access() admitted: the lane admits by the same route's tier.
      if (minTier === undefined) return;
      if (body.length > MAX_LANE_BYTES) return;
      const key = `${caller.account.tier} ${target}`;
      const kept = answers.get(key);
      if (kept !== undefined && kept.epoch === epoch && kept.at === at) return;
      if (kept === undefined && answers.size >= MAX_LANE_ANSWERS) {
        answers.delete(answers.keys().next().value!);
      }
      answers.set(key, {
        epoch,
        at,
        body,
        length: String(Buffer.byteLength(body)),
        minTier,
        route: routePath(c),
        path: c.req.path,
      });
    },

    /** Answers the request and returns true, or returns false having done nothing at all. */
    answer(req: IncomingMessage, res: ServerResponse): boolean {
      if (req.method !== "GET" || req.url === undefined) return false;
      const header = req.headers.authorization;
      if (header === undefined) return false;
      const started = log.isLevelEnabled("info") ? performance.now() : undefined;
      let found: { account: Account; answer: LaneAnswer; decision: RateDecision } | undefined;
      try {
        found = admitted(header, req.url);
      } catch {
        // Nothing was counted (a full disk, an unreadable key table): the router meets the same
        // and answers it with its error.
        return false;
      }
      if (found === undefined) return false;
      const { account, answer, decision } = found;
      served += 1;
      const requestId = nextRequestId();
      res.writeHead(200, headersFor(requestId, answer, decision));
      res.end(answer.body);
      if (started !== undefined) {
        writeRequestLine(log, {
          request_id: requestId,
          account_id: account.id,
          method: "GET",
          route: answer.route,
          path: answer.path,
          status: 200,
          started,
        });
      }
      return true;
    },

    /** How many requests the lane has answered (for tests and the bench). */
    served: () => served,
  };
}

export type AnswerLane = ReturnType<typeof createAnswerLane>;
