import * as v from "valibot";
import { CATEGORIES } from "../../domain";
import type { Result } from "../../result";
import type { MarketFacts, Outcome } from "../ingest";
import { describeIssues, describeRecord, hash, tokenId, upstreamTime } from "./records";

/**
 * Gamma `/markets` objects → market rows. Gamma sends `outcomes`, `outcomePrices` and
 * `clobTokenIds` as JSON-encoded strings. Our model is binary: index 0 of those arrays is YES
 * and index 1 is NO whatever the names ("Yes"/"No", "Up"/"Down", two teams).
 */

export interface GammaMarket {
  market: MarketFacts;
  /** Outcome token ids, [YES, NO]; null when the market has no order book tokens. */
  tokens: [string, string] | null;
  /** The outcome names as Polymarket shows them, [YES, NO]. */
  outcomeNames: [string, string];
  /**
   * Closed without a winner: "split" when the prices settled between 0 and 1 (a 50/50), or
   * "cancelled" when no outcome pays. Such a market never resolves YES or NO.
   */
  voided: { reason: "split" | "cancelled"; at: number | null } | null;
}

/**
 * The markets of a Gamma event (`/events` embeds them without their event): each gets its
 * event (tags and category, not the market list) under `events`, as `/markets` serves it.
 * Anything that is not an event with a market list gives no markets.
 */
export function marketsOfEvent(raw: unknown): unknown[] {
  if (typeof raw !== "object" || raw === null) return [];
  const { markets, ...event } = raw as { markets?: unknown };
  if (!Array.isArray(markets)) return [];
  return markets.map((m) =>
    typeof m === "object" && m !== null && !("events" in m) ? { ...m, events: [event] } : m,
  );
}

/** Our six categories; any other source text is kept (lowercased). */
export { CATEGORIES };

/** Polymarket's category and tag names (slugified) that mean one of our six. */
const CATEGORY_OF: Record<string, (typeof CATEGORIES)[number]> = {
  politics: "politics",
  "us-politics": "politics",
  "world-politics": "politics",
  elections: "politics",
  "us-elections": "politics",
  "global-elections": "politics",
  geopolitics: "politics",
  crypto: "crypto",
  cryptocurrency: "crypto",
  "crypto-prices": "crypto",
  bitcoin: "crypto",
  ethereum: "crypto",
  solana: "crypto",
  sports: "sports",
  nba: "sports",
  nfl: "sports",
  mlb: "sports",
  nhl: "sports",
  soccer: "sports",
  football: "sports",
  tennis: "sports",
  golf: "sports",
  mma: "sports",
  ufc: "sports",
  f1: "sports",
  cricket: "sports",
  esports: "sports",
  culture: "culture",
  "pop-culture": "culture",
  entertainment: "culture",
  movies: "culture",
  music: "culture",
  celebrities: "culture",
  awards: "culture",
  tv: "culture",
  economics: "economics",
  economy: "economics",
  finance: "economics",
  business: "economics",
  fed: "economics",
  "fed-rates": "economics",
  inflation: "economics",
  "breaking-news": "breaking-news",
};

/** Maps a source category or tag to one of ours; undefined when it is none of them. */
export function knownCategory(text: string): (typeof CATEGORIES)[number] | undefined {
  const key = text
    .trim()
    .toLowerCase()
    .replace(/[\s_]+/g, "-");
  return Object.hasOwn(CATEGORY_OF, key) ? CATEGORY_OF[key] : undefined;
}

const tag = v.looseObject({
  label: v.nullish(v.string()),
  slug: v.nullish(v.string()),
});

const event = v.looseObject({
  category: v.nullish(v.string()),
  tags: v.nullish(v.array(tag)),
});

/** A JSON-encoded array of exactly two strings, as Gamma sends outcome lists. */
const encodedPair = <T extends v.GenericSchema<string, string>>(item: T, what: string) =>
  v.pipe(
    v.string((i) => `must be a JSON-encoded list of ${what} (got ${i.received})`),
    v.rawTransform(({ dataset, addIssue, NEVER }) => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(dataset.value);
      } catch {
        addIssue({ message: `is not valid JSON (got ${JSON.stringify(dataset.value)})` });
        return NEVER;
      }
      if (!Array.isArray(parsed) || parsed.length !== 2) {
        addIssue({ message: `must list exactly two ${what} (got ${dataset.value})` });
        return NEVER;
      }
      const items: string[] = [];
      for (const entry of parsed) {
        const result = v.safeParse(item, entry);
        if (!result.success) {
          addIssue({ message: `${what}: ${describeIssues(result.issues)}` });
          return NEVER;
        }
        items.push(result.output);
      }
      return items as [string, string];
    }),
  );

const text = v.pipe(v.string(), v.trim(), v.nonEmpty());
const numericText = v.pipe(
  v.string(),
  v.check((s) => s.trim() !== "" && Number.isFinite(Number(s)), "must be a number"),
);

const GammaMarketRecord = v.looseObject({
  conditionId: hash,
  slug: v.pipe(
    v.string((i) => `must be a string (got ${i.received})`),
    v.trim(),
    v.nonEmpty("must not be empty"),
  ),
  question: v.nullish(v.string()),
  outcomes: encodedPair(text, "outcome names"),
  outcomePrices: v.nullish(encodedPair(numericText, "prices")),
  clobTokenIds: v.nullish(encodedPair(tokenId, "token ids")),
  closed: v.nullish(v.boolean()),
  endDate: upstreamTime,
  createdAt: upstreamTime,
  closedTime: upstreamTime,
  umaEndDate: upstreamTime,
  updatedAt: upstreamTime,
  category: v.nullish(v.string()),
  tags: v.nullish(v.array(tag)),
  events: v.nullish(v.array(event)),
});

type GammaMarketRecord = v.InferOutput<typeof GammaMarketRecord>;

/** Names a Gamma record in messages. */
export const describeGammaRecord = (raw: unknown) =>
  `market ${describeRecord(raw, ["id", "slug", "conditionId"])}`;

export function mapGammaMarket(raw: unknown): Result<GammaMarket> {
  const parsed = v.safeParse(GammaMarketRecord, raw);
  if (!parsed.success) {
    return { ok: false, reason: `${describeGammaRecord(raw)}: ${describeIssues(parsed.issues)}` };
  }
  const m = parsed.output;
  const resolution = resolutionOf(m);
  return {
    ok: true,
    value: {
      market: {
        slug: m.slug,
        title: m.question?.trim() || null,
        category: categoryOf(m),
        condition_id: m.conditionId,
        end_date: m.endDate ?? null,
        created_at: m.createdAt ?? null,
        resolved_outcome: resolution?.outcome ?? null,
        resolved_at: resolution?.at ?? null,
      },
      tokens: m.clobTokenIds ?? null,
      outcomeNames: m.outcomes as [string, string],
      voided: resolution ? null : voidOf(m),
    },
  };
}

/**
 * Resolved when closed and one price is exactly 1: a 50/50 or disputed close has no winner in
 * our binary model. The time is when trading closed (`closedTime`), else the oracle's end, else
 * the scheduled end, else Gamma's last update.
 */
function resolutionOf(m: GammaMarketRecord): { outcome: Outcome; at: number } | null {
  if (m.closed !== true || !m.outcomePrices) return null;
  const winners = m.outcomePrices.map((p) => Number(p) === 1);
  if (winners[0] === winners[1]) return null;
  const at = m.closedTime ?? m.umaEndDate ?? m.endDate ?? m.updatedAt;
  if (at === null || at === undefined) return null;
  return { outcome: winners[0] ? "YES" : "NO", at };
}

/** A close without exactly one price of 1: a split (some price above 0) or a cancellation. */
function voidOf(m: GammaMarketRecord): GammaMarket["voided"] {
  if (m.closed !== true || !m.outcomePrices) return null;
  const prices = m.outcomePrices.map(Number);
  if (prices.some((p) => p === 1)) return null;
  const at = m.closedTime ?? m.umaEndDate ?? m.endDate ?? m.updatedAt ?? null;
  return { reason: prices.some((p) => p > 0) ? "split" : "cancelled", at };
}

/**
 * Category comes from the market's event (Gamma embeds it under `events`), then the market's
 * own fields and tags: the first that names one of our six wins; otherwise the first source
 * text, lowercased; otherwise null.
 */
function categoryOf(m: GammaMarketRecord): string | null {
  const first = m.events?.[0];
  const tagNames = (tags: readonly { label?: string | null; slug?: string | null }[] | null) =>
    (tags ?? []).flatMap((t) => [t.label, t.slug]);
  const candidates = [
    first?.category,
    m.category,
    ...tagNames(first?.tags ?? null),
    ...tagNames(m.tags ?? null),
  ].filter((c): c is string => typeof c === "string" && c.trim() !== "");
  for (const candidate of candidates) {
    const known = knownCategory(candidate);
    if (known) return known;
  }
  return candidates[0]?.trim().toLowerCase() ?? null;
}
