import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { h } from "./dom";

/**
 * Charts drawn by uPlot (canvas). Each chart's host records, after uPlot's own draw hook ran, how
 * many data points it drew (data-drawn), for the browser tests; and carries a text summary for
 * screen readers (the canvas itself is an image).
 */
export interface Series {
  label: string;
  values: (number | null)[];
  color: string;
  /** Points only, no line (whale entries on a price line). */
  points?: boolean;
  /** Bars (a histogram). */
  bars?: boolean;
}

export interface ChartOptions {
  title: string;
  /** The x values: Unix seconds, or 0..n-1 with `labels` for a category axis. */
  x: number[];
  series: Series[];
  labels?: string[];
  yLabel?: string;
  height?: number;
}

export function chart(options: ChartOptions): HTMLElement {
  const host = h("figure", {
    className: "chart",
    attrs: { role: "img", "aria-label": `${options.title}: ${options.x.length} points` },
    data: { chart: options.title },
  });
  const caption = h("figcaption", {}, options.title);
  host.append(caption);
  // Drawn once the host is in the page (uPlot measures nothing, but wants a width).
  queueMicrotask(() => draw(host, options));
  return host;
}

function draw(host: HTMLElement, options: ChartOptions): void {
  const width = Math.max(320, Math.min(host.clientWidth || 720, 960));
  const { labels } = options;
  const bars = uPlot.paths.bars?.({ size: [0.6, 64] });
  const plot = new uPlot(
    {
      width,
      height: options.height ?? 240,
      legend: { show: true },
      cursor: { drag: { x: true, y: false } },
      scales: { x: { time: labels === undefined } },
      axes: [
        labels ? { values: (_u, splits) => splits.map((i) => labels[i] ?? "") } : {},
        { label: options.yLabel ?? "", size: 70 },
      ],
      series: [
        {},
        ...options.series.map((s) => ({
          label: s.label,
          stroke: s.color,
          fill: s.bars ? s.color : undefined,
          width: s.points ? 0 : 2,
          paths: s.bars ? bars : s.points ? () => null : undefined,
          points: s.points ? { show: true, size: 9, fill: s.color } : { show: false },
        })),
      ],
      hooks: {
        draw: [
          (u) => {
            let drawn = 0;
            for (const values of u.data.slice(1)) {
              for (const value of values) if (value !== null && value !== undefined) drawn += 1;
            }
            host.dataset.drawn = String(drawn);
          },
        ],
      },
    },
    [options.x, ...options.series.map((s) => s.values)] as uPlot.AlignedData,
    host,
  );
  host.dataset.points = String(options.x.length);
  // The first series' last value, as drawn: the browser tests compare it with the API's figure.
  const last = options.series[0]?.values.findLast((v) => v !== null);
  if (last !== undefined && last !== null) host.dataset.last = String(last);
  void plot;
}
