import type { Outcome, TradeSide } from "../../src/domain";
import type { NewTrade } from "../../src/ingest/ingest";

let txn = 0;

/**
 * A trade row as the ingest path takes it, with a transaction hash never used before (in this
 * process) and log index 0. usd_value is price × size unless given.
 */
export function newTrade(
  wallet: string,
  marketId: number,
  outcome: Outcome,
  side: TradeSide,
  price: number,
  size: number,
  ts: number,
  usdValue = price * size,
): NewTrade {
  return {
    // The counter leads, as a real hash's random bytes do: the duplicate check looks a fill up by
    // the hash's first 8 bytes (sql/0010), and shared ones make it scan every earlier fill.
    tx_hash: `0x${(++txn).toString(16).padStart(16, "0").padEnd(64, "0")}`,
    log_index: 0,
    wallet,
    market_id: marketId,
    outcome,
    side,
    price,
    size,
    usd_value: usdValue,
    ts,
  };
}
