import { randomBytes } from "node:crypto";
import { type Tier, WEBHOOK_ENDPOINT_CAP } from "../auth/tiers";
import type { Clock } from "../clock";
import type { Db } from "../db/open";
import { keyId, recordedKeyId, recordKeyId } from "../installation/key";
import { fail, ok, type Result } from "../result";
import { decryptSecret, encryptSecret } from "./secrets";
import { newSecret } from "./signer";
import { checkCallbackUrl } from "./ssrf";

export const CHANNELS = ["dashboard", "api"] as const;
export type Channel = (typeof CHANNELS)[number];
export const SCORE_TYPES = ["whale", "insider"] as const;
export type ScoreType = (typeof SCORE_TYPES)[number];

export const MAX_CATEGORY_LENGTH = 64;

export interface Endpoint {
  id: string;
  accountId: number;
  channel: Channel;
  callbackUrl: string;
  /** Filters; null means no constraint. */
  minScore: number | null;
  scoreType: ScoreType | null;
  category: string | null;
  createdAt: number;
}

export interface NewEndpoint {
  accountId: number;
  /** The account's tier, which sets the cap on its endpoints. */
  tier: Tier;
  channel: Channel;
  callbackUrl: string;
  minScore?: number | null;
  scoreType?: ScoreType | null;
  category?: string | null;
}

/** Why a creation was refused: an invalid field (400) or the plan's cap (403). */
export type CreateFailure = { ok: false; reason: string; refusal: "invalid" | "over_cap" };

interface EndpointRow {
  id: string;
  account_id: number;
  channel: Channel;
  callback_url: string;
  min_score: number | null;
  score_type: ScoreType | null;
  category: string | null;
  created_at: number;
}

const toEndpoint = (row: EndpointRow): Endpoint => ({
  id: row.id,
  accountId: row.account_id,
  channel: row.channel,
  callbackUrl: row.callback_url,
  minScore: row.min_score,
  scoreType: row.score_type,
  category: row.category,
  createdAt: row.created_at,
});

export type Endpoints = ReturnType<typeof createEndpoints>;

/**
 * Webhook endpoints of both channels. The secret is generated here, returned once, and stored
 * only encrypted; `secretOf` decrypts it for the sender and nothing else.
 */
export function createEndpoints(deps: {
  db: Db;
  clock: Clock;
  secretKey: Buffer;
  allowPrivate: boolean;
}) {
  const { db, clock, secretKey } = deps;
  const ownKeyId = keyId(secretKey);
  const w = db.writer;
  const columns =
    "id, account_id, channel, callback_url, min_score, score_type, category, created_at";
  const insert = w.prepare<{
    id: string;
    accountId: number;
    channel: Channel;
    url: string;
    minScore: number | null;
    scoreType: ScoreType | null;
    category: string | null;
    secret: string;
    createdAt: number;
  }>(
    `INSERT INTO webhook_endpoints
       (id, account_id, channel, callback_url, min_score, score_type, category, secret_encrypted,
        created_at)
     VALUES (@id, @accountId, @channel, @url, @minScore, @scoreType, @category, @secret, @createdAt)`,
  );
  const countLive = w.prepare<[number], { n: number }>(
    "SELECT count(*) AS n FROM webhook_endpoints WHERE account_id = ? AND deleted_at IS NULL",
  );
  const byId = w.prepare<[string], EndpointRow>(
    `SELECT ${columns} FROM webhook_endpoints WHERE id = ? AND deleted_at IS NULL`,
  );
  const byAccount = w.prepare<[number], EndpointRow>(
    `SELECT ${columns} FROM webhook_endpoints
      WHERE account_id = ? AND deleted_at IS NULL ORDER BY created_at, id`,
  );
  const all = w.prepare<[], EndpointRow>(
    `SELECT ${columns} FROM webhook_endpoints WHERE deleted_at IS NULL ORDER BY created_at, id`,
  );
  const secretById = w.prepare<[string], { secret_encrypted: string }>(
    "SELECT secret_encrypted FROM webhook_endpoints WHERE id = ?",
  );
  const markDeleted = w.prepare<[number, string]>(
    "UPDATE webhook_endpoints SET deleted_at = ? WHERE id = ? AND deleted_at IS NULL",
  );
  // A removed endpoint gets nothing more: its waiting deliveries end as dead, visibly.
  const abandonPending = w.prepare<[string]>(
    `UPDATE deliveries
        SET status = 'dead', next_attempt_at = NULL, lease_until = NULL,
            last_error = 'endpoint removed'
      WHERE endpoint_id = ? AND status = 'pending'`,
  );

  function validate(input: NewEndpoint): Result<{ url: string; category: string | null }> {
    const url = checkCallbackUrl(input.callbackUrl, { allowPrivate: deps.allowPrivate });
    if (!url.ok) return url;
    const { minScore, scoreType } = input;
    if (minScore != null && !(Number.isInteger(minScore) && minScore >= 0 && minScore <= 100)) {
      return fail("min_score must be an integer from 0 to 100");
    }
    if (scoreType != null && !(SCORE_TYPES as readonly string[]).includes(scoreType)) {
      return fail(`score_type must be one of ${SCORE_TYPES.join(", ")}`);
    }
    const category = input.category == null ? null : input.category.trim();
    if (category !== null && (category === "" || category.length > MAX_CATEGORY_LENGTH)) {
      return fail(`category must be 1-${MAX_CATEGORY_LENGTH} characters`);
    }
    return ok({ url: input.callbackUrl, category });
  }

  return {
    /** Creates an endpoint and returns it with its secret, which is never available again. */
    create(
      input: NewEndpoint,
    ): { ok: true; value: { endpoint: Endpoint; secret: string } } | CreateFailure {
      const valid = validate(input);
      if (!valid.ok) return { ok: false, reason: valid.reason, refusal: "invalid" };
      const secret = newSecret();
      const sealed = encryptSecret(secretKey, secret);
      const id = `wh_${randomBytes(12).toString("hex")}`;
      return w.transaction(() => {
        // Every stored secret is under the recorded key: another process that started with
        // another key (on a database that had no secret yet) cannot mix in a second one.
        const recorded = recordedKeyId(w);
        if (recorded === null) recordKeyId(w, ownKeyId, clock.now());
        else if (recorded !== ownKeyId) {
          throw new Error(
            `this process runs with installation key id ${ownKeyId} but the database records ${recorded}; restart it`,
          );
        }
        const cap = WEBHOOK_ENDPOINT_CAP[input.tier];
        const live = countLive.get(input.accountId)?.n ?? 0;
        if (live >= cap) {
          return {
            ok: false as const,
            refusal: "over_cap" as const,
            reason: `webhook endpoint cap reached: the ${input.tier} plan allows ${cap} endpoint${cap === 1 ? "" : "s"} per account and this account has ${live}; delete one first`,
          };
        }
        insert.run({
          id,
          accountId: input.accountId,
          channel: input.channel,
          url: valid.value.url,
          minScore: input.minScore ?? null,
          scoreType: input.scoreType ?? null,
          category: valid.value.category,
          secret: sealed,
          createdAt: clock.now(),
        });
        return { ok: true as const, value: { endpoint: toEndpoint(byId.get(id)!), secret } };
      })();
    },

    get(id: string): Endpoint | undefined {
      const row = byId.get(id);
      return row ? toEndpoint(row) : undefined;
    },

    /** The live endpoints of one account, or of every account when null; oldest first. */
    list: (accountId: number | null): Endpoint[] =>
      (accountId === null ? all.all() : byAccount.all(accountId)).map(toEndpoint),

    /** Removes a live endpoint; false when there is none with this id. */
    remove(id: string): boolean {
      return w.transaction(() => {
        if (markDeleted.run(clock.now(), id).changes === 0) return false;
        abandonPending.run(id);
        return true;
      })();
    },

    /** The plaintext secret, for signing a delivery. Never log or return it. */
    secretOf(id: string): string {
      const row = secretById.get(id);
      if (!row) throw new Error(`no webhook endpoint ${id}`);
      return decryptSecret(secretKey, row.secret_encrypted);
    },
  };
}
