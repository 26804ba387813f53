import { parseAbi } from "viem";
import type { Label } from "../ingest";

/**
 * Polymarket's contracts on Polygon (chain id 137) and the events the chain ingester reads.
 * docs/ingest.md describes what is read from them; the exchanges and collateral changed on
 * 2026-04-28 (V1 → V2), and both eras are read alike, so a backfill across the switch needs
 * nothing special. Addresses are kept lowercase, as stored.
 */

export const V1_EXCHANGE = "0x4bfb41d5b3570defd03c39a9a4d8de6bd8b8982e";
export const V1_NEG_RISK_EXCHANGE = "0xc5d563a36ae78145c45a50134d48a1215220f80a";
export const V2_EXCHANGE = "0xe111180000d2663c0091e4f400237545b87b996b";
export const V2_NEG_RISK_EXCHANGE = "0xe2222d279d744050d28e00520010520000310f59";

/** Every exchange contract of both eras: the `taker` of an aggressor's summary fill. */
export const EXCHANGES: readonly string[] = [
  V1_EXCHANGE,
  V1_NEG_RISK_EXCHANGE,
  V2_EXCHANGE,
  V2_NEG_RISK_EXCHANGE,
];

export const USDC_E = "0x2791bca1f2de4661ed88a30c99a7a9449aa84174";
export const NATIVE_USDC = "0x3c499c542cef5e3811e1192ce70d8cc03d5c3359";
export const PUSD = "0xc011a7e12a19f7b1f670d46f03b03f3342e82dfb";
/** The collateral tokens whose Transfer logs become `transfers` rows (token "USDC"), 6 decimals. */
export const COLLATERAL_TOKENS: readonly string[] = [USDC_E, NATIVE_USDC, PUSD];

export const CONDITIONAL_TOKENS = "0x4d97dcd97ec945f40cf65f87097ace5ea0476045";
export const PROXY_WALLET_FACTORY = "0xab45c5a4b0c941a2f231c04c3f49182e1a254052";
export const SAFE_FACTORY = "0xaacfeea03eb1561c4e67d661e40682bd20e3541b";
export const ZERO_ADDRESS = "0x0000000000000000000000000000000000000000";

export const ORDER_FILLED_V1_SIGNATURE =
  "event OrderFilled(bytes32 indexed orderHash, address indexed maker, address indexed taker, uint256 makerAssetId, uint256 takerAssetId, uint256 makerAmountFilled, uint256 takerAmountFilled, uint256 fee)";
export const ORDER_FILLED_V2_SIGNATURE =
  "event OrderFilled(bytes32 indexed orderHash, address indexed maker, address indexed taker, uint8 side, uint256 tokenId, uint256 makerAmountFilled, uint256 takerAmountFilled, uint256 fee, bytes32 builder, bytes32 metadata)";
export const TRANSFER_SIGNATURE =
  "event Transfer(address indexed from, address indexed to, uint256 value)";

export const ORDER_FILLED_V1_ABI = parseAbi([ORDER_FILLED_V1_SIGNATURE]);
export const ORDER_FILLED_V2_ABI = parseAbi([ORDER_FILLED_V2_SIGNATURE]);
export const TRANSFER_ABI = parseAbi([TRANSFER_SIGNATURE]);

/** topic0 of each event, as published; a test checks them against keccak of the signatures. */
export const ORDER_FILLED_V1_TOPIC =
  "0xd0a08e8c493f9c94f29311604c9de1b4e8c8d4c06bd0c789af57f2d65bfec0f6";
export const ORDER_FILLED_V2_TOPIC =
  "0xd543adfd945773f1a62f74f0ee55a5e3b9b1a28262980ba90b1a89f2ea84d8ee";
export const TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";

/** Collateral and shares both have 6 decimals on Polymarket. */
export const UNIT = 1e6;

/**
 * Labels the funding analytics rely on: money from these is never "funding" by a person
 * (docs/methodology.md, funding graph). Written (idempotently) by every chain round.
 */
export const POLYMARKET_LABELS: readonly Label[] = [
  { address: V1_EXCHANGE, kind: "platform", name: "Polymarket CTF Exchange (V1)" },
  {
    address: V1_NEG_RISK_EXCHANGE,
    kind: "platform",
    name: "Polymarket Neg Risk CTF Exchange (V1)",
  },
  { address: V2_EXCHANGE, kind: "platform", name: "Polymarket CTF Exchange (V2)" },
  {
    address: V2_NEG_RISK_EXCHANGE,
    kind: "platform",
    name: "Polymarket Neg Risk CTF Exchange (V2)",
  },
  { address: CONDITIONAL_TOKENS, kind: "platform", name: "Polymarket Conditional Tokens" },
  { address: PUSD, kind: "platform", name: "Polymarket pUSD" },
  { address: PROXY_WALLET_FACTORY, kind: "proxy_factory", name: "Polymarket Proxy Wallet Factory" },
  { address: SAFE_FACTORY, kind: "proxy_factory", name: "Polymarket Gnosis Safe Factory" },
];

/**
 * Transfers to or from these are settlement plumbing (trades, splits, redemptions, pUSD wraps,
 * mints and burns), not funding between people; they are not stored as transfers.
 */
export const SETTLEMENT_ADDRESSES: ReadonlySet<string> = new Set([
  ...EXCHANGES,
  CONDITIONAL_TOKENS,
  PUSD,
  ZERO_ADDRESS,
]);
