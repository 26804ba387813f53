import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** The paths of the .cpuprofile files `node --cpu-prof --cpu-prof-dir=DIR` wrote in `dir`. */
export function profilesIn(dir: string): string[] {
  return readdirSync(dir)
    .filter((name) => name.endsWith(".cpuprofile"))
    .map((name) => join(dir, name));
}

/** The parts of a V8 .cpuprofile (written by `node --cpu-prof`) this summary reads. */
interface CpuProfile {
  nodes: {
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number };
    children?: number[];
  }[];
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileLine {
  name: string;
  /** Share of the sampled time that was not idle. */
  share: number;
}

export interface ProfileSummary {
  busyMs: number;
  /** Self time by place: node internals, a package in node_modules, a file of ours. */
  byArea: ProfileLine[];
  /** Self time by function. */
  byFunction: ProfileLine[];
  /** Time with the function on the stack (callees included), for our own code (src/, cli/). */
  ourInclusive: ProfileLine[];
}

/** Where a frame's code lives, coarse enough to point at what to change. */
function areaOf(url: string, functionName: string): string {
  if (url === "") return functionName.startsWith("(") ? functionName : "(native)";
  if (url.startsWith("node:")) return url;
  const inModules = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (inModules) return `node_modules/${inModules[1]}`;
  const ours = /\/((?:src|cli|bench)\/.*)$/.exec(url);
  return ours ? ours[1]! : url;
}

const top = (totals: Map<string, number>, busy: number, count: number): ProfileLine[] =>
  [...totals]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([name, us]) => ({ name, share: us / busy }));

/** Self time per area and per function, idle time left out. */
export function summariseProfile(file: string, count = 15): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
  const frames = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
  const parents = new Map<number, number>();
  for (const node of profile.nodes)
    for (const child of node.children ?? []) parents.set(child, node.id);
  const nameOf = (frame: CpuProfile["nodes"][number]["callFrame"]) =>
    `${frame.functionName || "(anonymous)"} ${areaOf(frame.url, frame.functionName)}:${frame.lineNumber + 1}`;
  const byArea = new Map<string, number>();
  const byFunction = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let busy = 0;
  profile.samples.forEach((id, index) => {
    const frame = frames.get(id);
    const us = profile.timeDeltas[index] ?? 0;
    if (!frame || frame.functionName === "(idle)") return;
    busy += us;
    const area = areaOf(frame.url, frame.functionName);
    byArea.set(area, (byArea.get(area) ?? 0) + us);
    const name = nameOf(frame);
    byFunction.set(name, (byFunction.get(name) ?? 0) + us);
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parents.get(at)) {
      const f = frames.get(at)!;
      if (f.url.includes("/node_modules/") || !/\/(src|cli)\//.test(f.url)) continue;
      const own = nameOf(f);
      if (seen.has(own)) continue;
      seen.add(own);
      inclusive.set(own, (inclusive.get(own) ?? 0) + us);
    }
  });
  return {
    busyMs: busy / 1000,
    byArea: top(byArea, busy, count),
    byFunction: top(byFunction, busy, count),
    ourInclusive: top(inclusive, busy, count),
  };
}

/**
 * A summary as the benchmarks print it: "profile of HEADING (N ms busy)", then each list with
 * its shares of the busy time (self time by area unless `areas` is false).
 */
export function formatProfile(
  heading: string,
  summary: ProfileSummary,
  options: { areas?: boolean } = {},
): string {
  const share = (value: number) => `${(value * 100).toFixed(1).padStart(5)}%`;
  const list = (title: string, lines: ProfileLine[]) => [
    `  ${title}:`,
    ...lines.map((l) => `    ${share(l.share)}  ${l.name}`),
  ];
  return [
    `profile of ${heading} (${Math.round(summary.busyMs)} ms busy)`,
    ...(options.areas === false ? [] : list("self time by area", summary.byArea)),
    ...list("self time by function", summary.byFunction),
    ...list("our functions, callees included", summary.ourInclusive),
  ].join("\n");
}
