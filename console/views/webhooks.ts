import { format, h, replace, section, table } from "../dom";
import { failure, heading, type View } from "../view";

interface Endpoint {
  id: string;
  callback_url: string;
  min_score: number | null;
  score_type: string | null;
  category: string | null;
  created_at: string;
}

interface Delivery {
  id: string;
  event: string;
  status: string;
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  created_at: string;
  delivered_at: string | null;
}

interface TestResult {
  ok: boolean;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
}

/**
 * The account's webhook endpoints, each with its recent deliveries and a test action
 * (POST /v1/webhooks/{id}/test sends a sample payload now). Creating and removing endpoints stay
 * with the API and the CLI: the console shows what is there.
 */
export const webhooksView: View = async (ctx) => {
  ctx.main.append(heading("Webhooks"));
  const list = await ctx.api.get<{ data: Endpoint[] }>("/v1/webhooks");
  if (!ctx.alive()) return undefined;
  if (!list.ok) {
    ctx.main.append(failure(list));
    return undefined;
  }
  if (list.body.data.length === 0) {
    ctx.main.append(
      h(
        "p",
        {},
        "No webhook endpoints on this account yet. Create one with POST /v1/webhooks (docs/webhooks.md).",
      ),
    );
  }
  const deliveries = await Promise.all(
    list.body.data.map((e) =>
      ctx.api.get<{ data: Delivery[] }>(`/v1/webhooks/${e.id}/deliveries`, { limit: 10 }),
    ),
  );
  if (!ctx.alive()) return undefined;
  list.body.data.forEach((endpoint, i) => {
    const answer = deliveries[i];
    const outcome = h("p", { className: "test-result", attrs: { "aria-live": "polite" } });
    const test = h("button", { type: "button" }, "Send a test");
    test.addEventListener("click", async () => {
      test.disabled = true;
      replace(outcome, "Sending…");
      const sent = await ctx.api.call<TestResult>("POST", `/v1/webhooks/${endpoint.id}/test`);
      test.disabled = false;
      if (!sent.ok) {
        replace(outcome, failure(sent));
        return;
      }
      const r = sent.body;
      replace(
        outcome,
        r.ok
          ? `Delivered: HTTP ${r.status_code} in ${r.duration_ms} ms.`
          : `Not delivered: ${r.error ?? `HTTP ${r.status_code}`} (${r.duration_ms} ms).`,
      );
      outcome.dataset.ok = String(r.ok);
    });
    ctx.main.append(
      section(
        endpoint.callback_url,
        h(
          "p",
          { className: "address" },
          `${endpoint.id} · min score ${endpoint.min_score ?? "any"} · ${endpoint.score_type ?? "all types"} · ${endpoint.category ?? "all categories"} · created ${format.time(endpoint.created_at)}`,
        ),
        h("div", { className: "actions" }, test, outcome),
        answer?.ok
          ? table(
              "Recent deliveries",
              [
                {
                  label: "Created",
                  cell: (d) => format.time(d.created_at),
                  sort: (d) => d.created_at,
                },
                { label: "Event", cell: (d) => d.event },
                {
                  label: "Status",
                  cell: (d) => h("span", { className: `status ${d.status}` }, d.status),
                  sort: (d) => d.status,
                },
                { label: "Attempts", cell: (d) => format.number(d.attempts), numeric: true },
                {
                  label: "Last HTTP",
                  cell: (d) => (d.last_status_code === null ? "–" : String(d.last_status_code)),
                },
                { label: "Last error", cell: (d) => d.last_error ?? "" },
              ],
              answer.body.data,
            )
          : answer
            ? failure(answer)
            : null,
      ),
    );
  });
  return undefined;
};
