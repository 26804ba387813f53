import { createHash, randomBytes } from "node:crypto";
import type { Clock } from "../clock";
import type { Db } from "../db/open";
import { fail, ok, type Result } from "../result";
import { TIER_LIMITS, type Tier } from "./tiers";

export type KeyKind = "api" | "mcp";

export const KEY_PREFIX: Record<KeyKind, string> = { api: "svc_api_", mcp: "svc_mcp_" };
const KEY_SHAPE = /^svc_(api|mcp)_[0-9a-f]{48}$/;

export interface Account {
  id: number;
  name: string;
  tier: Tier;
  /** Effective limits: the operator's override where set, else the tier's. */
  hourlyLimit: number;
  monthlyLimit: number;
  limitsOverridden: boolean;
  createdAt: number;
}

export interface KeyInfo {
  id: string;
  account: string;
  tier: Tier;
  kind: KeyKind;
  hint: string;
  createdAt: number;
  revokedAt: number | null;
}

export interface MintedKey {
  key: string;
  id: string;
  account: string;
  tier: Tier;
  kind: KeyKind;
}

/** What a request presenting a valid key is allowed to act as. */
export interface Caller {
  keyId: string;
  kind: KeyKind;
  account: Account;
}

interface AccountRow {
  id: number;
  name: string;
  tier: Tier;
  hourly_limit: number | null;
  monthly_limit: number | null;
  created_at: number;
}

export function hashKey(key: string): Buffer {
  return createHash("sha256").update(key).digest();
}

function toAccount(row: AccountRow): Account {
  const limits = TIER_LIMITS[row.tier];
  return {
    id: row.id,
    name: row.name,
    tier: row.tier,
    hourlyLimit: row.hourly_limit ?? limits.hourly,
    monthlyLimit: row.monthly_limit ?? limits.monthly,
    limitsOverridden: row.hourly_limit !== null || row.monthly_limit !== null,
    createdAt: row.created_at,
  };
}

export type Accounts = ReturnType<typeof createAccounts>;

/**
 * How long a looked-up key is trusted before it is looked up again. A key revoked
 * by another process (the CLI) must be refused within 1 second (docs/api.md, Basics); half of
 * that leaves margin.
 */
export const KEY_CACHE_MS = 500;
const KEY_CACHE_ENTRIES = 10_000;

export function createAccounts(db: Db, clock: Clock) {
  const w = db.writer;
  const accountColumns = "id, name, tier, hourly_limit, monthly_limit, created_at";
  const byName = w.prepare<[string], AccountRow>(
    `SELECT ${accountColumns} FROM accounts WHERE name = ?`,
  );
  const all = w.prepare<[], AccountRow>(`SELECT ${accountColumns} FROM accounts ORDER BY id`);
  const insertAccount = w.prepare<[string, Tier, number]>(
    "INSERT INTO accounts (name, tier, created_at) VALUES (?, ?, ?)",
  );
  const updateTier = w.prepare<[Tier, string]>("UPDATE accounts SET tier = ? WHERE name = ?");
  const updateLimits = w.prepare<[number | null, number | null, string]>(
    "UPDATE accounts SET hourly_limit = ?, monthly_limit = ? WHERE name = ?",
  );
  const insertKey = w.prepare<[string, number, KeyKind, Buffer, string, number]>(
    "INSERT INTO api_keys (id, account_id, kind, key_hash, hint, created_at) VALUES (?, ?, ?, ?, ?, ?)",
  );
  const keyColumns = `k.id, a.name AS account, a.tier, k.kind, k.hint, k.created_at AS createdAt,
    k.revoked_at AS revokedAt`;
  const allKeys = w.prepare<[], KeyInfo>(
    `SELECT ${keyColumns} FROM api_keys k JOIN accounts a ON a.id = k.account_id ORDER BY k.created_at, k.id`,
  );
  const keyById = w.prepare<[string], KeyInfo>(
    `SELECT ${keyColumns} FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.id = ?`,
  );
  const keyIdByHash = w.prepare<[Buffer], { id: string }>(
    "SELECT id FROM api_keys WHERE key_hash = ?",
  );
  const revoke = w.prepare<[number, string]>(
    "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
  );
  // The request path reads through the read-only connection. One indexed lookup per request is
  // what makes a revocation from another process take effect at once.
  const callerByHash = db.reader.prepare<
    [Buffer],
    AccountRow & { key_id: string; kind: KeyKind; revoked_at: number | null }
  >(
    `SELECT k.id AS key_id, k.kind, k.revoked_at, a.${accountColumns.replaceAll(", ", ", a.")}
       FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.key_hash = +?`,
  );

  // Presented key → who it was when looked up, and when. Never logged or persisted.
  const recent = new Map<string, { caller: Caller | undefined; at: number }>();
  const forget = () => recent.clear();

  function get(name: string): Account | undefined {
    const row = byName.get(name);
    return row ? toAccount(row) : undefined;
  }

  function create(name: string, tier: Tier): Result<Account> {
    if (!/^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/.test(name)) {
      return fail(
        `account name "${name}" must be 1-64 letters, digits, dots, dashes, underscores or @`,
      );
    }
    if (byName.get(name)) return fail(`account "${name}" already exists`);
    insertAccount.run(name, tier, clock.now());
    return ok(get(name)!);
  }

  return {
    get,
    create,
    list: (): Account[] => all.all().map(toAccount),

    setTier(name: string, tier: Tier): Result<Account> {
      if (updateTier.run(tier, name).changes === 0) return fail(`no account named "${name}"`);
      forget();
      return ok(get(name)!);
    },

    setLimits(name: string, limits: { hourly: number; monthly: number } | null): Result<Account> {
      const changed = updateLimits.run(limits?.hourly ?? null, limits?.monthly ?? null, name);
      if (changed.changes === 0) return fail(`no account named "${name}"`);
      forget();
      return ok(get(name)!);
    },

    /** Mints a key for an account, creating the account on first use. The key is returned once. */
    mintKey(input: { tier: Tier; account?: string; kind: KeyKind }): Result<MintedKey> {
      return w.transaction((): Result<MintedKey> => {
        let account = input.account === undefined ? undefined : get(input.account);
        if (account && account.tier !== input.tier) {
          return fail(
            `account "${account.name}" is on tier ${account.tier}, not ${input.tier}: change it with "accounts set-tier ${account.name} ${input.tier}"`,
          );
        }
        if (!account) {
          const name = input.account ?? `account-${randomBytes(4).toString("hex")}`;
          const created = create(name, input.tier);
          if (!created.ok) return created;
          account = created.value;
        }
        const key = KEY_PREFIX[input.kind] + randomBytes(24).toString("hex");
        const id = `key_${randomBytes(8).toString("hex")}`;
        const hint = `${key.slice(0, 12)}…${key.slice(-4)}`;
        insertKey.run(id, account.id, input.kind, hashKey(key), hint, clock.now());
        return ok({ key, id, account: account.name, tier: account.tier, kind: input.kind });
      })();
    },

    listKeys: (): KeyInfo[] => allKeys.all(),

    /** Revokes by key id or by the key itself. */
    revokeKey(idOrKey: string): Result<KeyInfo> {
      const id = KEY_SHAPE.test(idOrKey) ? keyIdByHash.get(hashKey(idOrKey))?.id : idOrKey;
      const key = id === undefined ? undefined : keyById.get(id);
      if (!key) return fail(`no key "${idOrKey.startsWith("svc_") ? "(the key given)" : idOrKey}"`);
      if (key.revokedAt !== null) return fail(`key ${key.id} was already revoked`);
      revoke.run(clock.now(), key.id);
      forget();
      return ok(keyById.get(key.id)!);
    },

    /**
     * The caller behind a presented key, or undefined for a malformed, unknown or revoked key.
     * Answers are reused for KEY_CACHE_MS: the hash and the join are most of a cheap request's
     * cost. Changes made through this object clear the cache at once; changes made by another
     * process (the CLI) are seen within KEY_CACHE_MS.
     */
    authenticate(key: string): Caller | undefined {
      const now = clock.now();
      // Only keys of the right shape are remembered, so a remembered key needs no second check.
      const hit = recent.get(key);
      if (hit && now - hit.at < KEY_CACHE_MS && now >= hit.at) return hit.caller;
      if (!KEY_SHAPE.test(key)) return undefined;
      const row = callerByHash.get(hashKey(key));
      const caller =
        row && row.revoked_at === null
          ? { keyId: row.key_id, kind: row.kind, account: toAccount(row) }
          : undefined;
      if (recent.size >= KEY_CACHE_ENTRIES) recent.clear();
      recent.set(key, { caller, at: now });
      return caller;
    },
  };
}
