import type { WalletFacts } from "../ingest";
import { fail, type RoundContext } from "./context";
import { mapLeaderboardEntry } from "./data-api";
import { type LeaderboardState, loadState, STATE_KEYS, saveState } from "./state";

/** The data API serves the leaderboard 50 rows at a time. */
const LEADERBOARD_PAGE = 50;

/**
 * Platform names and PnL from the all-time PnL leaderboard, re-read every
 * `leaderboardEveryMs`. A read in progress resumes at its stored offset.
 */
export async function refreshLeaderboard(ctx: RoundContext): Promise<void> {
  const { api, ingest, options, summary, clock } = ctx;
  const state = loadState<LeaderboardState>(ingest, STATE_KEYS.leaderboard) ?? {
    completed_at: null,
    next_offset: null,
  };
  const fresh =
    state.next_offset === null &&
    state.completed_at !== null &&
    clock.now() - state.completed_at < options.leaderboardEveryMs;
  if (fresh) return;

  let offset = state.next_offset ?? 0;
  let page = 0;
  while (offset < options.leaderboardDepth && !options.signal?.aborted) {
    const limit = Math.min(LEADERBOARD_PAGE, options.leaderboardDepth - offset);
    const answer = await api.leaderboardPage(offset, limit, options.signal);
    if (!answer.ok) fail(answer.reason);
    const asOf = clock.now();
    const where = `data API /v1/leaderboard offset ${offset}`;
    const wallets: WalletFacts[] = [];
    const bad: { raw: unknown; reason: string }[] = [];
    answer.value.forEach((raw, index) => {
      const mapped = mapLeaderboardEntry(raw, asOf);
      if (mapped.ok) wallets.push(mapped.value);
      else bad.push({ raw, reason: `record ${index + 1}: ${mapped.reason}` });
    });
    const last =
      answer.value.length < limit || offset + answer.value.length >= options.leaderboardDepth;
    let stored = 0;
    ctx.transaction(() => {
      for (const b of bad) ctx.quarantine("leaderboard", where, b.reason, b.raw);
      for (const wallet of wallets) {
        const status = ingest.upsertWallet(wallet);
        if (status === "new") summary.wallets_new++;
        if (status === "updated") summary.wallets_updated++;
        if (status !== "present") stored++;
      }
      offset += answer.value.length;
      const next: LeaderboardState = last
        ? { completed_at: clock.now(), next_offset: null }
        : { completed_at: state.completed_at, next_offset: offset };
      saveState(ingest, STATE_KEYS.leaderboard, next);
    });
    ctx.pageDone("leaderboard", ++page, answer.value.length, stored);
    if (last) break;
  }
}
