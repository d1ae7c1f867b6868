// A small SVG writer for the benchmark charts: histograms in small multiples and line charts with reference
// lines. Plain strings, no chart package; the output opens in any browser and renders on GitHub.

const FONT = 'font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif"';
const PALETTE = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#4b5563"];

export function escapeXml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

function text(x: number, y: number, content: string, attributes = ""): string {
  return `<text x="${fmt(x)}" y="${fmt(y)}" ${FONT} ${attributes}>${escapeXml(content)}</text>`;
}

function fmt(value: number): string {
  return String(Math.round(value * 10) / 10);
}

/** Round tick values covering [0, max]: 1, 2 or 5 times a power of ten per step. */
export function niceTicks(max: number, count = 5): number[] {
  if (!(max > 0)) return [0, 1];
  const rough = max / count;
  const power = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 5, 10].map((m) => m * power).find((candidate) => candidate >= rough) ?? 10 * power;
  const ticks: number[] = [];
  for (let value = 0; value <= max + step * 0.999; value += step) ticks.push(Math.round(value * 1e9) / 1e9);
  return ticks;
}

function svgDocument(width: number, height: number, body: string[], title: string): string {
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="${escapeXml(title)}">`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    text(16, 24, title, 'font-size="16" font-weight="600" fill="#111827"'),
    ...body,
    "</svg>",
    "",
  ].join("\n");
}

export interface HistogramPanel {
  title: string;
  values: number[];
}

export interface HistogramOptions {
  title: string;
  /** Bin upper edges, ascending; values above the last edge land in a final overflow bin. */
  edges: number[];
  edgeLabel: (edge: number) => string;
  /** Vertical reference markers drawn at the bin whose range holds the value (e.g. KCP's requeues). */
  markers?: { value: number; label: string }[];
  columns?: number;
  footnote?: string;
}

/** One histogram per panel, same bins everywhere, so panels compare at a glance. */
export function histograms(panels: HistogramPanel[], options: HistogramOptions): string {
  const columns = options.columns ?? 2;
  const panelWidth = 440;
  const panelHeight = 200;
  const rows = Math.ceil(panels.length / columns);
  const width = columns * panelWidth + 32;
  const height = 48 + rows * (panelHeight + 24) + (options.footnote ? 24 : 0);
  const bins = options.edges.length + 1;
  const body: string[] = [];
  panels.forEach((panel, index) => {
    const x0 = 16 + (index % columns) * panelWidth;
    const y0 = 44 + Math.floor(index / columns) * (panelHeight + 24);
    const plot = { left: x0 + 36, top: y0 + 24, width: panelWidth - 60, height: panelHeight - 70 };
    const counts = new Array<number>(bins).fill(0);
    for (const value of panel.values) {
      const bin = options.edges.findIndex((edge) => value <= edge);
      counts[bin === -1 ? bins - 1 : bin]++;
    }
    const maxCount = Math.max(1, ...counts);
    const ticks = niceTicks(maxCount, 3);
    const top = ticks[ticks.length - 1];
    const barWidth = plot.width / bins;
    body.push(
      text(x0, y0 + 12, `${panel.title} (n=${panel.values.length})`, 'font-size="13" font-weight="600" fill="#111827"'),
    );
    for (const tick of ticks) {
      const y = plot.top + plot.height - (tick / top) * plot.height;
      body.push(
        `<line x1="${fmt(plot.left)}" y1="${fmt(y)}" x2="${fmt(plot.left + plot.width)}" y2="${fmt(y)}" stroke="#e5e7eb"/>`,
      );
      body.push(text(plot.left - 6, y + 4, String(tick), 'font-size="10" fill="#6b7280" text-anchor="end"'));
    }
    counts.forEach((count, bin) => {
      const barHeight = (count / top) * plot.height;
      const x = plot.left + bin * barWidth;
      body.push(
        `<rect x="${fmt(x + 1)}" y="${fmt(plot.top + plot.height - barHeight)}" width="${fmt(barWidth - 2)}" height="${fmt(barHeight)}" fill="${PALETTE[index % PALETTE.length]}"/>`,
      );
      const label =
        bin < options.edges.length
          ? `≤${options.edgeLabel(options.edges[bin])}`
          : `>${options.edgeLabel(options.edges[options.edges.length - 1])}`;
      body.push(
        text(
          x + barWidth / 2,
          plot.top + plot.height + 12,
          label,
          `font-size="9" fill="#374151" text-anchor="end" transform="rotate(-45 ${fmt(x + barWidth / 2)} ${fmt(plot.top + plot.height + 12)})"`,
        ),
      );
    });
    for (const marker of options.markers ?? []) {
      const bin = options.edges.findIndex((edge) => marker.value <= edge);
      // A marker on a bin edge sits on that edge; one inside a bin, in its middle.
      const offset = bin !== -1 && options.edges[bin] === marker.value ? 1 : 0.5;
      const x = plot.left + (bin === -1 ? bins - 0.5 : bin + offset) * barWidth;
      body.push(
        `<line x1="${fmt(x)}" y1="${fmt(plot.top)}" x2="${fmt(x)}" y2="${fmt(plot.top + plot.height)}" stroke="#111827" stroke-dasharray="4 3"/>`,
      );
      body.push(text(x - 3, plot.top + 8, marker.label, 'font-size="9" fill="#111827" text-anchor="end"'));
    }
    body.push(
      `<line x1="${fmt(plot.left)}" y1="${fmt(plot.top + plot.height)}" x2="${fmt(plot.left + plot.width)}" y2="${fmt(plot.top + plot.height)}" stroke="#374151"/>`,
    );
  });
  if (options.footnote) body.push(text(16, height - 10, options.footnote, 'font-size="11" fill="#4b5563"'));
  return svgDocument(width, height, body, options.title);
}

export interface Series {
  label: string;
  points: { x: number; y: number }[];
  dashed?: boolean;
  /** Draw only the line (a reference), no point markers. */
  reference?: boolean;
  color?: string;
}

export interface LinePanel {
  title: string;
  yLabel: string;
  series: Series[];
  /** Upper end of the y axis; defaults to the largest value (reference lines included). */
  yMax?: number;
}

/** Line charts side by side sharing an x axis (e.g. RSS and CPU vs number of clusters). */
export function lineCharts(panels: LinePanel[], options: { title: string; xLabel: string; footnote?: string }): string {
  const panelWidth = 460;
  const panelHeight = 300;
  const width = panels.length * panelWidth + 32;
  const legendHeight = 14 * Math.max(...panels.map((panel) => panel.series.length));
  const height = 60 + panelHeight + 40 + legendHeight + (options.footnote ? 36 : 0);
  const body: string[] = [];
  panels.forEach((panel, index) => {
    const x0 = 16 + index * panelWidth;
    const y0 = 44;
    const plot = { left: x0 + 56, top: y0 + 28, width: panelWidth - 90, height: panelHeight - 80 };
    const xs = panel.series.flatMap((series) => series.points.map((point) => point.x));
    const ys = panel.series.flatMap((series) => series.points.map((point) => point.y));
    const xTicks = niceTicks(Math.max(1, ...xs), 5);
    const yTicks = niceTicks(panel.yMax ?? Math.max(1, ...ys), 5);
    const xMax = xTicks[xTicks.length - 1];
    const yMax = yTicks[yTicks.length - 1];
    const px = (x: number) => plot.left + (x / xMax) * plot.width;
    const py = (y: number) => plot.top + plot.height - (Math.min(y, yMax) / yMax) * plot.height;
    body.push(text(x0, y0 + 12, panel.title, 'font-size="13" font-weight="600" fill="#111827"'));
    for (const tick of yTicks) {
      body.push(
        `<line x1="${fmt(plot.left)}" y1="${fmt(py(tick))}" x2="${fmt(plot.left + plot.width)}" y2="${fmt(py(tick))}" stroke="#e5e7eb"/>`,
      );
      body.push(text(plot.left - 6, py(tick) + 4, String(tick), 'font-size="10" fill="#6b7280" text-anchor="end"'));
    }
    for (const tick of xTicks) {
      body.push(
        text(px(tick), plot.top + plot.height + 14, String(tick), 'font-size="10" fill="#6b7280" text-anchor="middle"'),
      );
    }
    body.push(
      text(
        plot.left + plot.width / 2,
        plot.top + plot.height + 30,
        options.xLabel,
        'font-size="11" fill="#374151" text-anchor="middle"',
      ),
    );
    body.push(
      text(
        x0 + 12,
        plot.top + plot.height / 2,
        panel.yLabel,
        `font-size="11" fill="#374151" text-anchor="middle" transform="rotate(-90 ${fmt(x0 + 12)} ${fmt(plot.top + plot.height / 2)})"`,
      ),
    );
    body.push(
      `<line x1="${fmt(plot.left)}" y1="${fmt(plot.top + plot.height)}" x2="${fmt(plot.left + plot.width)}" y2="${fmt(plot.top + plot.height)}" stroke="#374151"/>`,
    );
    panel.series.forEach((series, seriesIndex) => {
      const color = series.color ?? (series.reference ? "#6b7280" : PALETTE[seriesIndex % PALETTE.length]);
      const path = clipped(series.points, yMax)
        .map((point, i) => `${i === 0 ? "M" : "L"}${fmt(px(point.x))},${fmt(py(point.y))}`)
        .join(" ");
      body.push(
        `<path d="${path}" fill="none" stroke="${color}" stroke-width="${series.reference ? 1.5 : 2}"${series.dashed ? ' stroke-dasharray="6 4"' : ""}/>`,
      );
      if (!series.reference) {
        for (const point of series.points) {
          body.push(`<circle cx="${fmt(px(point.x))}" cy="${fmt(py(point.y))}" r="3.5" fill="${color}"/>`);
          body.push(
            text(px(point.x) + 5, py(point.y) - 6, String(Math.round(point.y)), `font-size="10" fill="${color}"`),
          );
        }
      }
      // Below the axis, so the legend never hides a point.
      const legendY = plot.top + plot.height + 46 + seriesIndex * 14;
      body.push(
        `<line x1="${fmt(plot.left + 8)}" y1="${fmt(legendY)}" x2="${fmt(plot.left + 26)}" y2="${fmt(legendY)}" stroke="${color}" stroke-width="2"${series.dashed ? ' stroke-dasharray="6 4"' : ""}/>`,
      );
      body.push(text(plot.left + 30, legendY + 4, series.label, `font-size="10" fill="#111827"`));
    });
  });
  if (options.footnote) {
    const lines = wrap(options.footnote, 150);
    lines.forEach((line, i) => body.push(text(16, height - 30 + i * 13, line, 'font-size="11" fill="#4b5563"')));
  }
  return svgDocument(width, height, body, options.title);
}

/** The polyline up to where it leaves the chart's top edge, so a steep reference line keeps its slope. */
function clipped(points: { x: number; y: number }[], yMax: number): { x: number; y: number }[] {
  const result: { x: number; y: number }[] = [];
  for (const [i, point] of points.entries()) {
    if (point.y <= yMax) {
      result.push(point);
      continue;
    }
    const previous = points[i - 1];
    if (previous && previous.y < yMax)
      result.push({ x: previous.x + ((yMax - previous.y) / (point.y - previous.y)) * (point.x - previous.x), y: yMax });
    break;
  }
  return result;
}

function wrap(content: string, width: number): string[] {
  const lines: string[] = [];
  let current = "";
  for (const word of content.split(" ")) {
    if ((current + " " + word).trim().length > width) {
      lines.push(current);
      current = word;
    } else current = `${current} ${word}`.trim();
  }
  if (current) lines.push(current);
  return lines;
}
