import { addressPrefix } from "../refresh/writer";

/**
 * The category rankings and the edge screener order ties by address. Their indexes hold the
 * address's first 8 hex digits, not the address (sql/0024), so a walk in index order gives
 * address order except within a run of rows that tie on the value and on the prefix but name
 * different wallets: two wallets whose addresses share 8 digits, a few among a million wallets,
 * and only where their values also tie. Each ranking therefore has two statements: one that
 * walks the index in its order (no sort), and one that also orders by the whole address (SQLite
 * sorts each run of an equal value and prefix). A page is read with the first, and read again
 * with the second only when it holds such a run.
 *
 * The runs of equal (value, prefix) are contiguous in index order, so checking adjacent rows is
 * enough, and the rows read include the one past the page: a run that a page's end would cut is
 * seen too.
 */
export function prefixTie<R extends { address: string }>(
  rows: readonly R[],
  value: (row: R) => unknown,
): boolean {
  for (let i = 1; i < rows.length; i++) {
    const a = rows[i - 1]!;
    const b = rows[i]!;
    if (
      value(a) === value(b) &&
      a.address !== b.address &&
      addressPrefix(a.address) === addressPrefix(b.address)
    ) {
      return true;
    }
  }
  return false;
}

/**
 * The keyset condition "after (`value`, `address`)" of a ranking on `column` whose index orders
 * ties by the address's prefix (`c.address_prefix`, with `w` the wallet's wallet_ids row): the
 * first term lets SQLite seek, the second skips the run's earlier prefixes in the index before
 * the wallet's address is looked up, the third compares whole addresses within the key's prefix.
 * `thenBy` continues the third term for a ranking with a further tie-break (OR ...).
 */
export function prefixKeyset(column: string, value: string, address: string, thenBy = ""): string {
  return `AND ${column} <= ${value}
    AND (${column} < ${value} OR c.address_prefix >= substr(${address}, 3, 8))
    AND (${column} < ${value} OR c.address_prefix > substr(${address}, 3, 8)
         OR w.address > ${address} ${thenBy})`;
}
