import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";

/**
 * The real Polymarket payloads (copied unmodified from the shared captures, July 2026) and the
 * few constructed records the replay servers need beside them. Everything constructed is built
 * here, in plain sight, from a real record's shape.
 */

const here = new URL(".", import.meta.url).pathname;
const json = (file: string) => JSON.parse(readFileSync(`${here}${file}`, "utf8")) as unknown;

export type Raw = Record<string, unknown>;

export const realTrades = () => json("data-api-trades.json") as Raw[];
export const realActivity = () => json("data-api-activity_all.json") as Raw[];
export const realLeaderboard = () => json("data-api-leaderboard.json") as Raw[];
export const realPositions = () => json("data-api-positions.json") as Raw[];

/** One captured Gamma market: the capturer's own parse beside the raw object. */
export interface GammaCapture {
  slug: string;
  condition_id: string;
  token_ids: [string, string];
  end_sec: number;
  resolved: boolean;
  outcome_prices: [string, string];
  raw: Raw;
}

export const realGammaCaptures = (): GammaCapture[] =>
  gunzipSync(readFileSync(`${here}gamma-markets-btc-5m.jsonl.gz`))
    .toString("utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as GammaCapture);

export const realGammaMarkets = () => realGammaCaptures().map((c) => c.raw);

/**
 * The global trades feed the replay server serves, newest first: the five real `/trades` rows
 * and the real TRADE rows of `/activity` (same record shape), 47 fills in all.
 */
export function replayFeed(): Raw[] {
  const activityTrades = realActivity()
    .filter((a) => a.type === "TRADE")
    .map(({ type: _type, usdcSize: _usdc, ...trade }) => trade);
  return [...realTrades(), ...activityTrades].sort(
    (a, b) => (b.timestamp as number) - (a.timestamp as number),
  );
}

/** Gamma markets for the feed's condition ids, constructed on a real Gamma record's shape. */
interface TradeMarketSpec {
  id: string;
  conditionId: string;
  slug: string;
  question: string;
  outcomes: [string, string];
  /** [YES token, NO token]: the feed's own asset at its outcome index, a made-up id beside it. */
  tokens: [string, string];
  category: string;
  endDate: string;
  closed: boolean;
  outcomePrices: [string, string];
}

const FEED_MARKETS: TradeMarketSpec[] = [
  {
    id: "900001",
    conditionId: "0xace3c72c24fccb6731433483ece41c780432d84850edccd5a6bf3147ccea62a9",
    slug: "will-the-us-confirm-that-aliens-exist-by-september-30-396",
    question: "Will the US confirm that aliens exist by September 30?",
    outcomes: ["Yes", "No"],
    tokens: [
      "100000000000000000000000000000000000000000000000000000000000000000000000001",
      "36187795093008220558219256261729424135850137511571634448544248306719357578130",
    ],
    category: "Culture",
    endDate: "2026-09-30T12:00:00Z",
    closed: false,
    outcomePrices: ["0.03", "0.97"],
  },
  {
    id: "900002",
    conditionId: "0xad0785e454a8b0d96171b924ed7e1aa158ce87892ec81a44a0387cccdf92a3a7",
    slug: "mlb-stl-ari-2026-07-17",
    question: "St. Louis Cardinals vs. Arizona Diamondbacks",
    outcomes: ["St. Louis Cardinals", "Arizona Diamondbacks"],
    tokens: [
      "50439686646826559881210337175926663599989394468197167988269486206046406520312",
      "100000000000000000000000000000000000000000000000000000000000000000000000002",
    ],
    category: "Sports",
    endDate: "2026-07-18T04:00:00Z",
    closed: true,
    outcomePrices: ["0", "1"],
  },
  {
    id: "900003",
    conditionId: "0x5a3d9a107c0e19086f4b306b8c7d25417145c21b7849e255534de555bd8d29a6",
    slug: "atp-vukic-galarne-2026-07-17",
    question: "Granby: Aleksandar Vukic vs Alexis Galarneau",
    outcomes: ["Aleksandar Vukic", "Alexis Galarneau"],
    tokens: [
      "50162898951838580735367769240223588384995652175146484676014851603471670849825",
      "100000000000000000000000000000000000000000000000000000000000000000000000003",
    ],
    category: "Tennis",
    endDate: "2026-07-17T23:00:00Z",
    closed: true,
    outcomePrices: ["1", "0"],
  },
  {
    id: "900004",
    conditionId: "0xecba7b1db1c698ab73b3572abfcde327a02b5112676144e049edcc1e1e0f5b0b",
    slug: "fifwc-fra-esp-2026-07-14-team-to-advance",
    question: "France vs. Spain: Team to Advance",
    outcomes: ["France", "Spain"],
    tokens: [
      "100000000000000000000000000000000000000000000000000000000000000000000000004",
      "46421815574359643620514688756609814860051932583278915389775335554413697029363",
    ],
    category: "Soccer",
    endDate: "2026-07-14T21:00:00Z",
    closed: true,
    outcomePrices: ["0", "1"],
  },
  {
    id: "900005",
    conditionId: "0x20fac1c925b7a2fed6b3b2736f47a800b4d0d4001b9deaeb7b918868eb63d081",
    slug: "fifwc-fra-esp-2026-07-14-fra",
    question: "Will France win on 2026-07-14?",
    outcomes: ["Yes", "No"],
    tokens: [
      "100000000000000000000000000000000000000000000000000000000000000000000000005",
      "114008288197553961583518307739897802587067075299935011621746237390478872496575",
    ],
    category: "Sports",
    endDate: "2026-07-14T21:00:00Z",
    closed: true,
    outcomePrices: ["0", "1"],
  },
  // 0xead4f2… (atp-santill-valient-2026-07-17) is left out on purpose: Gamma "does not know" it,
  // so its fills are stored under a market made from the trade record's own fields.
];

export const MISSING_FROM_GAMMA =
  "0xead4f20a84556c6eeffc5a6275ff8fe2a74cfc433a7381c46d2e1091649c71e5";

export function feedMarkets(): Raw[] {
  const template = realGammaMarkets()[0]!;
  return FEED_MARKETS.map((spec) => ({
    ...template,
    id: spec.id,
    slug: spec.slug,
    question: spec.question,
    conditionId: spec.conditionId,
    outcomes: JSON.stringify(spec.outcomes),
    outcomePrices: JSON.stringify(spec.outcomePrices),
    clobTokenIds: JSON.stringify(spec.tokens),
    closed: spec.closed,
    endDate: spec.endDate,
    createdAt: "2026-07-01T00:00:00Z",
    closedTime: spec.closed ? spec.endDate.replace("T", " ").replace("Z", "+00") : null,
    events: [{ id: `e${spec.id}`, category: spec.category }],
  }));
}
