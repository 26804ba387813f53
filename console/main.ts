import "./style.css";
import { Api } from "./api";
import { format, h, replace } from "./dom";
import { session } from "./session";
import type { View } from "./view";
import { failure } from "./view";
import { clustersView } from "./views/clusters";
import { investigationsView } from "./views/investigations";
import { leaderboardsView } from "./views/leaderboards";
import { marketsView, marketView } from "./views/market";
import { signalsView } from "./views/signals";
import { statusView } from "./views/status";
import { walletView } from "./views/wallet";
import { webhooksView } from "./views/webhooks";

/**
 * The console's shell: sign-in, the navigation, the rate-limit figures, and a hash router that
 * draws one view at a time (docs/console.md). Routes hold only public identifiers.
 */
const VIEWS: Record<string, { title: string; view: View; nav?: string }> = {
  signals: { title: "Signals", view: signalsView, nav: "Signals" },
  leaderboards: { title: "Leaderboards", view: leaderboardsView, nav: "Leaderboards" },
  markets: { title: "Markets", view: marketsView, nav: "Markets" },
  market: { title: "Market", view: marketView },
  wallet: { title: "Wallet", view: walletView },
  clusters: { title: "Clusters", view: clustersView, nav: "Clusters" },
  investigations: { title: "Investigations", view: investigationsView, nav: "Investigations" },
  webhooks: { title: "Webhooks", view: webhooksView, nav: "Webhooks" },
  status: { title: "Status", view: statusView, nav: "Status" },
};
const HOME = "signals";

/** A route part as typed: a malformed %-escape stays as it is (the API then answers 400 or 404). */
function decodePart(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

function signIn(root: HTMLElement, problem?: string): void {
  const input = h("input", {
    id: "key",
    type: "password",
    name: "key",
    required: true,
    autocomplete: "off",
    placeholder: "svc_api_…",
  });
  const message = h("p", { className: "sign-in-problem", attrs: { role: "alert" } }, problem ?? "");
  const form = h(
    "form",
    {
      className: "sign-in",
      on: {
        submit: (event) => {
          event.preventDefault();
          void start(root, input.value.trim(), message);
        },
      },
    },
    h("h1", {}, "smartmoney console"),
    h("label", { htmlFor: "key" }, "API key"),
    input,
    h(
      "p",
      { className: "hint" },
      "Kept in this tab's session storage only. `npm run demo` prints one key per tier.",
    ),
    h("button", { type: "submit" }, "Sign in"),
    message,
  );
  replace(root, h("main", { id: "main" }, form));
  input.focus();
}

async function start(root: HTMLElement, key: string, message?: HTMLElement): Promise<void> {
  const api = new Api(key);
  const ping = await api.get<{ ok: boolean; tier: string }>("/v1/_ping");
  if (!ping.ok) {
    session.clear();
    if (message) replace(message, `Sign-in failed: ${ping.message}.`);
    else signIn(root, `Sign-in failed: ${ping.message}.`);
    return;
  }
  session.save(key);
  shell(root, api, ping.body.tier);
}

function shell(root: HTMLElement, api: Api, tier: string): void {
  const limits = h("p", {
    className: "limits",
    id: "rate-limit",
    attrs: { "aria-live": "polite" },
  });
  const showLimits = () => {
    const rl = api.rateLimit;
    if (!rl) return;
    const reset = new Date(rl.reset * 1000).toISOString();
    replace(
      limits,
      h("span", { data: { remaining: String(rl.remaining) } }, format.number(rl.remaining)),
      ` of ${format.number(rl.limit)} calls left, resets ${format.time(reset)}`,
    );
    limits.title = "X-RateLimit-Remaining / X-RateLimit-Limit / X-RateLimit-Reset";
  };
  api.onChange(showLimits);
  const nav = h(
    "nav",
    { attrs: { "aria-label": "Views" } },
    h(
      "ul",
      {},
      ...Object.entries(VIEWS)
        .filter(([, v]) => v.nav)
        .map(([name, v]) =>
          h("li", {}, h("a", { href: `#/${name}`, data: { nav: name } }, v.nav ?? "")),
        ),
    ),
  );
  const main = h("main", { id: "main" });
  const signOut = h(
    "button",
    {
      type: "button",
      className: "sign-out",
      on: {
        click: () => {
          session.clear();
          window.removeEventListener("hashchange", route);
          signIn(root);
        },
      },
    },
    "Sign out",
  );
  replace(
    root,
    h(
      "header",
      {},
      h("a", { className: "brand", href: `#/${HOME}` }, "smartmoney"),
      nav,
      h(
        "div",
        { className: "account" },
        h("span", { className: "tier", data: { tier } }, tier),
        limits,
        signOut,
      ),
    ),
    main,
  );

  let generation = 0;
  let cleanup: (() => void) | undefined;
  async function route(): Promise<void> {
    const [name = HOME, ...args] = location.hash.replace(/^#\/?/, "").split("/").map(decodePart);
    const entry = VIEWS[name] ?? VIEWS[HOME];
    if (!entry) return;
    cleanup?.();
    cleanup = undefined;
    const mine = ++generation;
    main.dataset.ready = "";
    main.dataset.view = name in VIEWS ? name : HOME;
    main.replaceChildren();
    document.title = `${entry.title} · smartmoney console`;
    for (const a of nav.querySelectorAll("a")) {
      if (a.dataset.nav === main.dataset.view) a.setAttribute("aria-current", "page");
      else a.removeAttribute("aria-current");
    }
    try {
      cleanup = await entry.view({ api, tier, main, args, alive: () => generation === mine });
    } catch (error) {
      main.append(
        failure({
          ok: false,
          status: 0,
          code: "console_error",
          message: (error as Error).message,
          tierNeeded: null,
          retryAfter: null,
        }),
      );
    }
    if (generation === mine) {
      main.dataset.ready = "true";
      main.querySelector<HTMLElement>("h1")?.focus({ preventScroll: true });
    }
  }
  window.addEventListener("hashchange", route);
  void route();
}

function boot(): void {
  const root = document.body;
  const key = session.key();
  if (key) void start(root, key);
  else signIn(root);
}

boot();
