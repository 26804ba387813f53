import { facts, format, h, section } from "../dom";
import { failure, heading, type View } from "../view";

/**
 * What the API says about its own freshness: the read models' as-of time and age (the
 * X-Read-Model-* headers of a data answer), the newest fill it serves (how far ingest lags the
 * clock), and the storage state of GET /healthz.
 */
export const statusView: View = async (ctx) => {
  const end = Date.now();
  const [health, newest] = await Promise.all([
    fetch("/healthz").then(
      async (res) =>
        res.ok
          ? ((await res.json()) as { ok: boolean; storage: { state: string; since?: string } })
          : null,
      () => null,
    ),
    ctx.api.get<{ data: { trade_timestamp: string; market_slug: string }[] }>("/v1/trades", {
      start: new Date(end - 90 * 86_400_000).toISOString(),
      end: new Date(end).toISOString(),
      limit: 1,
    }),
  ]);
  if (!ctx.alive()) return undefined;
  ctx.main.append(heading("Status"));
  const fresh = ctx.api.freshness;
  ctx.main.append(
    section(
      "Read models",
      fresh
        ? facts([
            ["Computed as of", format.time(fresh.asOf)],
            ["Age (s)", format.number(fresh.ageSeconds)],
          ])
        : h(
            "p",
            {},
            "No data answer yet: the read models have not been refreshed, or this key has made no data call.",
          ),
    ),
  );
  const ingest = section("Ingest");
  if (newest.ok) {
    const latest = newest.body.data[0];
    ingest.append(
      facts(
        latest
          ? [
              ["Newest fill", format.time(latest.trade_timestamp)],
              [
                "Lag behind the clock (s)",
                format.number(
                  Math.max(0, Math.round((end - Date.parse(latest.trade_timestamp)) / 1000)),
                ),
              ],
            ]
          : [["Newest fill", "none in the last 90 days"]],
      ),
    );
  } else {
    ingest.append(failure(newest));
  }
  ctx.main.append(
    ingest,
    section(
      "Storage",
      facts([
        ["Server", health?.ok ? "healthy" : "not answering"],
        ["Storage", health?.storage.state ?? "–"],
      ]),
    ),
  );
  return undefined;
};
