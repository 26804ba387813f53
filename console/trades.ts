import { type Column, format, marketLink, walletLink } from "./dom";

/** A trade as the API's pages of trades answer it (/v1/trades, a wallet's, a market's). */
export interface Trade {
  id: number;
  wallet: string;
  market_slug: string;
  outcome: "YES" | "NO";
  outcome_name: string | null;
  side: "BUY" | "SELL";
  price: number;
  size: number;
  usd_value: number;
  trade_timestamp: string;
}

/** A trade table's columns: when, the wallet (unless the table is one wallet's), market, side, price, USD. */
export function tradeColumns(options: { wallet: boolean }): Column<Trade>[] {
  return [
    {
      label: "When",
      cell: (t) => format.time(t.trade_timestamp),
      sort: (t) => t.trade_timestamp,
    },
    ...(options.wallet ? [{ label: "Wallet", cell: (t: Trade) => walletLink(t.wallet) }] : []),
    { label: "Market", cell: (t) => marketLink(t.market_slug) },
    { label: "Side", cell: (t) => `${t.side} ${t.outcome_name ?? t.outcome}` },
    { label: "Price", figure: (t) => t.price, show: format.price },
    { label: "USD", figure: (t) => t.usd_value, show: format.usd },
  ];
}
