import type { Answer, Api } from "./api";
import { type Child, h } from "./dom";

/** What every view gets: the API client, the key's tier and the element to draw into. */
export interface ViewContext {
  api: Api;
  tier: string;
  main: HTMLElement;
  /** Route parts after the view's name (#/wallet/0xabc… gives ["0xabc…"]). */
  args: string[];
  /** False once the user has left the view: pollers stop. */
  alive(): boolean;
}

/** Renders the view; resolves once its data is drawn. May return a clean-up. */
export type View = (ctx: ViewContext) => Promise<(() => void) | undefined>;

type Failed = Extract<Answer<unknown>, { ok: false }>;

/**
 * What a failed call shows: for a tier the key is below, the tier it needs, from the API's own
 * 403 (never a broken page); otherwise the API's message and status.
 */
export function failure(answer: Failed): HTMLElement {
  if (answer.status === 403 && answer.tierNeeded) {
    return h(
      "div",
      {
        className: "notice upgrade",
        attrs: { role: "note" },
        data: { tierNeeded: answer.tierNeeded },
      },
      h("strong", {}, `Needs the ${answer.tierNeeded} tier`),
      h("p", {}, `The API answered: ${answer.message}.`),
      h("p", {}, "Upgrade the account to see this view."),
    );
  }
  const retry = answer.retryAfter === null ? "" : ` Retry in ${answer.retryAfter} s.`;
  return h(
    "div",
    { className: "notice error", attrs: { role: "alert" }, data: { code: answer.code } },
    h("strong", {}, answer.status === 0 ? "No answer" : `${answer.status} ${answer.code}`),
    h("p", {}, `${answer.message}.${retry}`),
  );
}

/** What `draw` makes of an answer that came, or what its failure shows (failure above). */
export function orFailure<A extends { ok: true } | Failed>(
  answer: A,
  draw: (answer: Exclude<A, Failed>) => Child[],
): Child[] {
  return answer.ok ? draw(answer as Exclude<A, Failed>) : [failure(answer as Failed)];
}

export function heading(title: string, ...rest: (Node | string)[]): HTMLElement {
  return h("h1", { attrs: { tabindex: "-1" } }, title, ...rest);
}
