import type { Clock } from "../clock";
import type { Db } from "../db/open";
import { fail, ok, type Result } from "../result";

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const SLUG = /^[a-z0-9][a-z0-9-]{0,63}$/;

/** A wallet address as stored: validated and lowercase. */
export function parseAddress(text: string): Result<string> {
  const trimmed = text.trim();
  if (!ADDRESS.test(trimmed)) return fail(`"${text}" is not an address (0x + 40 hex)`);
  return ok(trimmed.toLowerCase());
}

export interface WalletList {
  slug: string;
  /** The owning account's id, or null for an operator's list shared by all. */
  accountId: number | null;
  members: number;
  createdAt: number;
}

export interface Follow {
  accountId: number;
  /** `wallet` for a direct follow, `list` for a followed list. */
  kind: "wallet" | "list";
  target: string;
  createdAt: number;
}

export type Follows = ReturnType<typeof createFollows>;

/**
 * The dashboard channel's subscriptions: wallets an account follows directly and lists it
 * follows. The outbox reads these tables when a signal fires; nothing here sends anything.
 */
export function createFollows(db: Db, clock: Clock) {
  const w = db.writer;
  const insertFollow = w.prepare<[number, string, number]>(
    "INSERT INTO follows (account_id, wallet, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
  );
  const deleteFollow = w.prepare<[number, string]>(
    "DELETE FROM follows WHERE account_id = ? AND wallet = ?",
  );
  const listBySlug = w.prepare<[string], { id: number }>("SELECT id FROM lists WHERE slug = ?");
  const insertList = w.prepare<[string, number | null, number]>(
    "INSERT INTO lists (slug, account_id, created_at) VALUES (?, ?, ?)",
  );
  const insertMember = w.prepare<[number, string, number]>(
    "INSERT INTO list_members (list_id, wallet, added_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
  );
  const deleteMember = w.prepare<[number, string]>(
    "DELETE FROM list_members WHERE list_id = ? AND wallet = ?",
  );
  const insertListFollow = w.prepare<[number, number, number]>(
    "INSERT INTO list_follows (account_id, list_id, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
  );
  const deleteListFollow = w.prepare<[number, number]>(
    "DELETE FROM list_follows WHERE account_id = ? AND list_id = ?",
  );
  const allLists = w.prepare<[], WalletList>(
    `SELECT l.slug, l.account_id AS accountId, l.created_at AS createdAt,
            (SELECT count(*) FROM list_members m WHERE m.list_id = l.id) AS members
       FROM lists l ORDER BY l.slug`,
  );
  const membersOf = w.prepare<[number], { wallet: string }>(
    "SELECT wallet FROM list_members WHERE list_id = ? ORDER BY wallet",
  );
  const followsOf = w.prepare<{ account: number | null }, Follow>(
    `SELECT account_id AS accountId, 'wallet' AS kind, wallet AS target, created_at AS createdAt
       FROM follows WHERE @account IS NULL OR account_id = @account
     UNION ALL
     SELECT lf.account_id, 'list', l.slug, lf.created_at
       FROM list_follows lf JOIN lists l ON l.id = lf.list_id
      WHERE @account IS NULL OR lf.account_id = @account
     ORDER BY 1, 2 DESC, 3`,
  );

  function listId(slug: string): Result<number> {
    const row = listBySlug.get(slug);
    return row ? ok(row.id) : fail(`no list "${slug}"`);
  }

  /** Applies `change` to each address of a list; all addresses valid or nothing changes. */
  function changeMembers(
    slug: string,
    wallets: string[],
    change: (listId: number, wallet: string) => number,
  ): Result<{ changed: number }> {
    const id = listId(slug);
    if (!id.ok) return id;
    const parsed: string[] = [];
    for (const text of wallets) {
      const address = parseAddress(text);
      if (!address.ok) return address;
      parsed.push(address.value);
    }
    return w.transaction(() => {
      let changed = 0;
      for (const wallet of parsed) changed += change(id.value, wallet);
      return ok({ changed });
    })();
  }

  return {
    followWallet(accountId: number, wallet: string): Result<{ added: boolean }> {
      const address = parseAddress(wallet);
      if (!address.ok) return address;
      const added = insertFollow.run(accountId, address.value, clock.now()).changes > 0;
      return ok({ added });
    },

    unfollowWallet(accountId: number, wallet: string): Result<{ removed: boolean }> {
      const address = parseAddress(wallet);
      if (!address.ok) return address;
      return ok({ removed: deleteFollow.run(accountId, address.value).changes > 0 });
    },

    followList(accountId: number, slug: string): Result<{ added: boolean }> {
      const id = listId(slug);
      if (!id.ok) return id;
      return ok({ added: insertListFollow.run(accountId, id.value, clock.now()).changes > 0 });
    },

    unfollowList(accountId: number, slug: string): Result<{ removed: boolean }> {
      const id = listId(slug);
      if (!id.ok) return id;
      return ok({ removed: deleteListFollow.run(accountId, id.value).changes > 0 });
    },

    /** The account's follows (all accounts' when null), direct ones first. */
    follows: (accountId: number | null): Follow[] => followsOf.all({ account: accountId }),

    createList(slug: string, accountId: number | null): Result<WalletList> {
      if (!SLUG.test(slug)) {
        return fail(`list slug "${slug}" must be 1-64 lowercase letters, digits or dashes`);
      }
      if (listBySlug.get(slug)) return fail(`list "${slug}" already exists`);
      const createdAt = clock.now();
      insertList.run(slug, accountId, createdAt);
      return ok({ slug, accountId, members: 0, createdAt });
    },

    addToList: (slug: string, wallets: string[]): Result<{ changed: number }> =>
      changeMembers(
        slug,
        wallets,
        (id, wallet) => insertMember.run(id, wallet, clock.now()).changes,
      ),

    removeFromList: (slug: string, wallets: string[]): Result<{ changed: number }> =>
      changeMembers(slug, wallets, (id, wallet) => deleteMember.run(id, wallet).changes),

    lists: (): WalletList[] => allLists.all(),

    members(slug: string): Result<string[]> {
      const id = listId(slug);
      if (!id.ok) return id;
      return ok(membersOf.all(id.value).map((row) => row.wallet));
    },
  };
}
