/**
 * The transfer-derived half of the funding graph (docs/methodology.md, Funding graph): each wallet's
 * funder, exchange deposit addresses, and the typed connections that come from money moving
 * (funded_by, funded, exchange_withdrawal, gas_provider, shared_deposit, pass_through). Built
 * with set-based SQL on the writer connection, inside the caller's transaction; the temporary
 * tables live on that connection only and are dropped at the end.
 */

import type { Connection } from "../db/open";

/** Confidence of each transfer-derived connection type. Raw transfers are certain; heuristics are not. */
export const TRANSFER_CONFIDENCE = {
  funded_by: 1,
  funded: 1,
  exchange_withdrawal: 1,
  gas_provider: 1,
  shared_deposit: 0.8,
  pass_through: 0.7,
} as const;

/** A distributor forwards at least this share of an inflow ... */
export const PASS_THROUGH_SHARE = 0.9;
/** ... within this long after receiving it. */
export const PASS_THROUGH_WINDOW_MS = 3_600_000;
/**
 * A deposit address receives from at least 2 wallets; one receiving from more than 50 is not a
 * personal exchange deposit address (it is a service), and linking every pair of its senders
 * would say nothing while costing a quadratic number of rows.
 */
export const DEPOSIT_MIN_SENDERS = 2;
export const DEPOSIT_MAX_SENDERS = 50;

export interface TransferGraphCounts {
  funded_wallets: number;
  deposit_addresses: number;
  pass_through_distributors: number;
  connections: number;
}

const LABELLED = "(SELECT address FROM labels)";

/** Runs one named step, recording how long it took. */
export type Timed = <T>(name: string, step: () => T) => T;

/** Rebuilds wallet_funding and wallet_connections from transfers and labels. */
export function rebuildTransferGraph(
  conn: Connection,
  timed: Timed = (_, step) => step(),
): TransferGraphCounts {
  dropScratch(conn);
  try {
    timed("flows", () => buildFlows(conn));
    const deposits = timed("deposit_addresses", () => buildDepositAddresses(conn));
    const funded = timed("funders", () => buildFunders(conn));
    const distributors = timed("pass_through", () => findPassThroughs(conn));
    timed("connections", () => insertConnections(conn));
    const connections = conn.prepare("SELECT COUNT(*) AS n FROM wallet_connections").get() as {
      n: number;
    };
    return {
      funded_wallets: funded,
      deposit_addresses: deposits,
      pass_through_distributors: distributors,
      connections: connections.n,
    };
  } finally {
    dropScratch(conn);
  }
}

function dropScratch(conn: Connection): void {
  conn.exec(`
    DROP TABLE IF EXISTS temp.funding_flow;
    DROP TABLE IF EXISTS temp.funding_deposits;
    DROP TABLE IF EXISTS temp.funding_passes;
    DROP TABLE IF EXISTS temp.funding_pass_links;
  `);
}

/** Every (sender, recipient, token) pair once: total amount, first and last transfer. */
function buildFlows(conn: Connection): void {
  conn.exec(`
    CREATE TEMP TABLE funding_flow (
      recipient TEXT NOT NULL,
      token     TEXT NOT NULL,
      sender    TEXT NOT NULL,
      amount    REAL NOT NULL,
      first_ts  INTEGER NOT NULL,
      last_ts   INTEGER NOT NULL,
      PRIMARY KEY (recipient, token, sender)
    ) WITHOUT ROWID;
    INSERT INTO funding_flow
      SELECT to_address, token, from_address, SUM(amount), MIN(ts), MAX(ts)
        FROM transfers
       WHERE from_address <> to_address
       GROUP BY to_address, token, from_address;
  `);
}

/**
 * Exchange deposit addresses: unlabelled, never trading, forwarding USDC to an exchange-labelled
 * address and receiving USDC from 2..50 unlabelled senders. The exchange named is the one it
 * forwarded its largest total to.
 */
function buildDepositAddresses(conn: Connection): number {
  conn.exec(`
    CREATE TEMP TABLE funding_deposits (
      address  TEXT PRIMARY KEY,
      exchange TEXT NOT NULL
    ) WITHOUT ROWID;
    CREATE INDEX temp.funding_flow_by_sender ON funding_flow (sender, token);
  `);
  return conn
    .prepare(
      `INSERT INTO funding_deposits (address, exchange)
       WITH sweeps AS (
         SELECT o.sender AS address, l.name AS exchange, MAX(o.amount) AS swept
           FROM funding_flow o JOIN labels l ON l.address = o.recipient AND l.kind = 'exchange'
          WHERE o.token = 'USDC' AND o.sender NOT IN ${LABELLED}
          GROUP BY o.sender)
       SELECT s.address, s.exchange FROM sweeps s
        WHERE (SELECT COUNT(*) FROM funding_flow i
                WHERE i.recipient = s.address AND i.token = 'USDC'
                  AND i.sender NOT IN ${LABELLED}) BETWEEN @min AND @max
          AND NOT EXISTS (SELECT 1 FROM wallet_ids t WHERE t.address = s.address)`,
    )
    .run({ min: DEPOSIT_MIN_SENDERS, max: DEPOSIT_MAX_SENDERS }).changes;
}

/**
 * Each unlabelled address's first inbound USDC transfer (ties on time broken by transfer id);
 * its sender is the funder unless labelled. Deposit addresses are exchange plumbing, not
 * wallets: whoever first paid into one did not fund it.
 */
function buildFunders(conn: Connection): number {
  conn.exec("DELETE FROM wallet_funding");
  conn.exec(`
    INSERT INTO wallet_funding (wallet, first_sender, first_amount, first_funded_at, funder)
    SELECT f.to_address, f.from_address, f.amount, f.ts,
           CASE WHEN f.from_address IN ${LABELLED} THEN NULL ELSE f.from_address END
      FROM (SELECT to_address, from_address, amount, ts,
                   row_number() OVER (PARTITION BY to_address ORDER BY ts, id) AS rn
              FROM transfers
             WHERE token = 'USDC' AND from_address <> to_address) f
     WHERE f.rn = 1
       AND f.to_address NOT IN ${LABELLED}
       AND f.to_address NOT IN (SELECT address FROM temp.funding_deposits)
  `);
  const row = conn
    .prepare("SELECT COUNT(*) AS n FROM wallet_funding WHERE funder IS NOT NULL")
    .get() as { n: number };
  return row.n;
}

/**
 * Every transfer-derived connection, one SELECT per type and end. They are written by one
 * statement sorted by the table's key: appending in key order is several times faster than
 * inserting a million rows in random order.
 */
function connectionSelects(): string[] {
  const c = TRANSFER_CONFIDENCE;
  const funding = `FROM wallet_funding w
    JOIN funding_flow f ON f.recipient = w.wallet AND f.token = 'USDC' AND f.sender = w.funder
   WHERE w.funder IS NOT NULL`;
  const withdrawals = `FROM funding_flow f JOIN labels l ON l.address = f.sender AND l.kind = 'exchange'
   WHERE f.token = 'USDC' AND f.recipient NOT IN ${LABELLED}`;
  const gas = `FROM funding_flow f LEFT JOIN labels l ON l.address = f.sender
   WHERE f.token = 'POL' AND f.recipient NOT IN ${LABELLED}`;
  const gasExchange = "CASE WHEN l.kind = 'exchange' THEN l.name END";
  return [
    // funded_by on the wallet, funded on the funder: every USDC transfer between the two.
    `SELECT w.wallet, ${c.funded_by}, f.last_ts, 'funded_by', w.funder, 'in', NULL, f.amount,
            f.first_ts ${funding}`,
    `SELECT w.funder, ${c.funded}, f.last_ts, 'funded', w.wallet, 'out', NULL, f.amount,
            f.first_ts ${funding}`,
    // USDC from an exchange-labelled address to an unlabelled one, with the exchange's name.
    `SELECT f.recipient, ${c.exchange_withdrawal}, f.last_ts, 'exchange_withdrawal', f.sender,
            'in', l.name, f.amount, f.first_ts ${withdrawals}`,
    `SELECT f.sender, ${c.exchange_withdrawal}, f.last_ts, 'exchange_withdrawal', f.recipient,
            'out', l.name, f.amount, f.first_ts ${withdrawals}`,
    // POL (gas) to an unlabelled address; the exchange's name when an exchange sent it.
    `SELECT f.recipient, ${c.gas_provider}, f.last_ts, 'gas_provider', f.sender, 'in',
            ${gasExchange}, f.amount, f.first_ts ${gas}`,
    `SELECT f.sender, ${c.gas_provider}, f.last_ts, 'gas_provider', f.recipient, 'out',
            ${gasExchange}, f.amount, f.first_ts ${gas}`,
    // Wallets paying into the same deposit address, pairwise (each pair appears from both
    // ends). Normalised to the counterparty: its deposits there, its first and last deposit.
    `SELECT a.sender, ${c.shared_deposit}, MAX(b.last_ts), 'shared_deposit', b.sender, 'both',
            MIN(d.exchange), SUM(b.amount), MIN(b.first_ts)
       FROM temp.funding_deposits d
       JOIN funding_flow a ON a.recipient = d.address AND a.token = 'USDC'
       JOIN funding_flow b ON b.recipient = d.address AND b.token = 'USDC' AND b.sender <> a.sender
      WHERE a.sender NOT IN ${LABELLED} AND b.sender NOT IN ${LABELLED}
      GROUP BY a.sender, b.sender`,
    // A pass-through distributor and the addresses it forwarded to, from both ends.
    `SELECT recipient, ${c.pass_through}, last_ts, 'pass_through', distributor, 'in', NULL,
            amount, first_ts FROM temp.funding_pass_links`,
    `SELECT distributor, ${c.pass_through}, last_ts, 'pass_through', recipient, 'out', NULL,
            amount, first_ts FROM temp.funding_pass_links`,
  ];
}

function insertConnections(conn: Connection): void {
  conn.exec("DELETE FROM wallet_connections");
  const columns =
    "address, confidence, last_seen, type, counterparty, direction, exchange, amount, first_seen";
  conn.exec(`
    INSERT INTO wallet_connections (${columns})
    SELECT * FROM (${connectionSelects().join("\n UNION ALL ")})
     ORDER BY 1, 2, 3, 4, 5, 6
  `);
}

/**
 * Pass-through distributors: an unlabelled address that, within an hour of a USDC inflow, sends
 * at least 90% of it on to unlabelled addresses. The forwarding transfers (each counted once,
 * however many inflow windows hold it) link distributor and recipient (temp.funding_pass_links).
 */
function findPassThroughs(conn: Connection): number {
  conn
    .prepare(
      `CREATE TEMP TABLE funding_passes AS
       SELECT i.to_address AS distributor, i.ts AS ts
         FROM transfers i
        WHERE i.token = 'USDC' AND i.from_address <> i.to_address
          AND i.to_address NOT IN ${LABELLED}
          AND (SELECT TOTAL(o.amount) FROM transfers o
                WHERE o.from_address = i.to_address AND o.token = 'USDC'
                  AND o.ts >= i.ts AND o.ts <= i.ts + @window
                  AND o.to_address <> i.to_address
                  AND o.to_address NOT IN ${LABELLED}) >= @share * i.amount`,
    )
    .run({ window: PASS_THROUGH_WINDOW_MS, share: PASS_THROUGH_SHARE });
  conn
    .prepare(
      `CREATE TEMP TABLE funding_pass_links AS
       SELECT o.from_address AS distributor, o.to_address AS recipient,
              SUM(o.amount) AS amount, MIN(o.ts) AS first_ts, MAX(o.ts) AS last_ts
         FROM (SELECT DISTINCT o.id, o.from_address, o.to_address, o.amount, o.ts
                 FROM funding_passes p
                 JOIN transfers o ON o.from_address = p.distributor AND o.token = 'USDC'
                                 AND o.ts >= p.ts AND o.ts <= p.ts + @window
                WHERE o.to_address <> o.from_address AND o.to_address NOT IN ${LABELLED}) o
        GROUP BY o.from_address, o.to_address`,
    )
    .run({ window: PASS_THROUGH_WINDOW_MS });
  const row = conn
    .prepare("SELECT COUNT(DISTINCT distributor) AS n FROM temp.funding_pass_links")
    .get() as { n: number };
  return row.n;
}
