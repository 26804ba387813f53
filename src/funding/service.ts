import type { AppDeps } from "../core";
import { createInvestigationQueries, type InvestigationQueries } from "./investigation-queries";
import { createFundingQueries, type FundingQueries } from "./queries";
import { type FundingRefreshSummary, type RefreshFundingOptions, refreshFunding } from "./refresh";

/** The funding graph and investigations, as the app hands them to REST, MCP, CLI and jobs. */
export interface Funding extends FundingQueries {
  investigations: InvestigationQueries;
  /** Rebuilds the read models at the app clock's time (the refresh job calls refreshFunding). */
  refresh(opts?: RefreshFundingOptions): FundingRefreshSummary;
}

export function createFunding(deps: Pick<AppDeps, "db" | "clock">): Funding {
  return {
    ...createFundingQueries(deps.db),
    investigations: createInvestigationQueries(deps.db),
    refresh: (opts) => refreshFunding(deps.db, deps.clock.now(), opts),
  };
}
