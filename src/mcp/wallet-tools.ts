import * as v from "valibot";
import type { App } from "../app";
import { notFound } from "../errors";
import { DOSSIER_ALERTS, DOSSIER_TRADES } from "../read/wallets";
import { WalletDossierSchema, WalletSearchSchema, WalletSignalSchema } from "../schemas/wallets";
import { address, integer } from "./inputs";
import { outputOf } from "./outputs";
import { defineTool, figure, type McpTool, usd } from "./tool";

const walletAddress = address(
  "address",
  "The wallet's address: 0x followed by 40 hex characters (any case).",
);

const neverTraded = (address: string) => notFound(`wallet ${address} has never traded`);

export function walletTools(app: App): McpTool[] {
  const { wallets } = app.read;
  return [
    defineTool({
      name: "get_wallet_signal",
      title: "Wallet smart-money signal",
      description:
        "A wallet's smart-money score (0-100, higher means more skilled), its confidence (0-1), the raw per-signal breakdown, its type (e.g. whale, market_maker, retail) and its stats (bets, win rate, Bayesian win rate, volume, PnL with its source). Use it to judge in one call whether a wallet is worth following. Same answer as GET /v1/signals/wallet/{address}.",
      rest: "GET /v1/signals/wallet/{address}",
      minTier: "free",
      input: v.strictObject({ address: walletAddress }),
      output: outputOf(WalletSignalSchema),
      run: ({ address }) => {
        const signal = wallets.signal(address);
        if (!signal) throw neverTraded(address);
        return signal;
      },
      summarize: (s) =>
        `Wallet ${s.wallet}: smart-money score ${figure(s.smart_money_score, 1)} (confidence ${figure(s.confidence)}), type ${s.wallet_type ?? "unknown"}; ${s.stats ? `${s.stats.resolved_bets} resolved bets, win rate ${figure(s.stats.win_rate)}, PnL ${usd(s.stats.total_pnl)}` : "no stats yet"}.`,
    }),
    defineTool({
      name: "get_wallet_dossier",
      title: "Wallet dossier",
      description: `Everything known about one wallet: platform name, type and stats, its ${DOSSIER_TRADES} latest trades, its ${DOSSIER_ALERTS} latest whale and insider alerts, and its sybil (funding) cluster membership or null. Same answer as GET /v1/wallets/{address} for a terminal key.`,
      rest: "GET /v1/wallets/{address}",
      minTier: "free",
      input: v.strictObject({ address: walletAddress }),
      output: outputOf(WalletDossierSchema),
      run: async ({ address }) => {
        const dossier = await wallets.dossier(address);
        if (!dossier) throw neverTraded(address);
        return dossier;
      },
      summarize: (d) =>
        `Wallet ${d.address}${d.platform_name ? ` (${d.platform_name})` : ""}: type ${d.wallet_type ?? "unknown"}, ${d.recent_trades.length} recent trades, ${d.alerts.length} alerts, ${d.funding_cluster ? "in a sybil cluster" : "in no sybil cluster"}.`,
    }),
    defineTool({
      name: "search_wallets",
      title: "Search wallets",
      description:
        "Finds wallets by address prefix (hex digits, with or without 0x) or by a case-insensitive part of their platform name. Address matches come first, then name matches by total volume. Use it to turn a trader's name into an address for the other wallet tools. Same answer as GET /v1/wallets/search.",
      rest: "GET /v1/wallets/search",
      minTier: "terminal",
      input: v.strictObject({
        query: v.pipe(
          v.string("query must be a string"),
          v.minLength(3, "query must be at least 3 characters"),
          v.maxLength(100, "query must be at most 100 characters"),
          v.description("3 to 100 characters: an address prefix or part of a platform name."),
        ),
        limit: v.optional(integer("limit", 1, 25, "How many wallets to return (1 to 25)."), 10),
      }),
      output: outputOf(WalletSearchSchema),
      run: ({ query, limit }) => wallets.search(query, limit),
      summarize: (r) => `${r.results.length} wallets match "${r.query}".`,
    }),
  ];
}
