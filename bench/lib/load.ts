/**
 * One autocannon run, in its own process so bench/http.ts can pin the load to a core of its own.
 * Takes a LoadSpec as JSON in argv[2]; prints a LoadResult as one JSON line on stdout.
 */
import autocannon from "autocannon";

export interface LoadSpec {
  url: string;
  method: "GET" | "POST" | "DELETE";
  headers: Record<string, string>;
  body?: string;
  connections: number;
  seconds: number;
}

export interface LoadResult {
  /** Mean of the per-second request counts (autocannon's "Req/Sec Avg"). */
  rps: number;
  /** Latencies in milliseconds. */
  p50: number;
  p99: number;
  requests: number;
  /** Responses whose status was not the expected one, connection errors, timeouts. */
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodes: Record<string, number>;
  /** CPU time the load generator used, as a share of one core: near 1 means it may be the limit. */
  loadCpu: number;
}

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2] ?? "") as LoadSpec;
  const cpuBefore = process.cpuUsage();
  const wallBefore = performance.now();
  const result = await autocannon({
    url: spec.url,
    method: spec.method,
    headers: spec.headers,
    body: spec.body,
    connections: spec.connections,
    duration: spec.seconds,
  });
  const cpu = process.cpuUsage(cpuBefore);
  const wallMs = performance.now() - wallBefore;
  const statusCodes: Record<string, number> = {};
  for (const [code, stats] of Object.entries(result.statusCodeStats ?? {})) {
    statusCodes[code] = stats.count ?? 0;
  }
  const out: LoadResult = {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    requests: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    statusCodes,
    loadCpu: (cpu.user + cpu.system) / 1000 / wallMs,
  };
  process.stdout.write(`${JSON.stringify(out)}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`load: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
