/** A line chart as a standalone SVG document: axes, ticks, labels, legend, shaded windows. No dependencies. */

export interface LineSeries {
  label: string;
  color: string;
  /** One value per x step (x = index * xStep). */
  values: readonly number[];
  dashed?: boolean;
  width?: number;
}

export interface ShadedWindow {
  from: number;
  to: number;
  label: string;
}

export interface ChartSpec {
  title: string;
  subtitle?: string;
  xLabel: string;
  yLabel: string;
  /** x of value i is (i + 0.5) * xStep: each value stands for the middle of its bucket. */
  xStep: number;
  xMax: number;
  series: readonly LineSeries[];
  shaded?: readonly ShadedWindow[];
  width?: number;
  height?: number;
}

function esc(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

/** A round step giving about `target` ticks over [0, max]. */
export function niceStep(max: number, target = 6): number {
  if (!(max > 0)) return 1;
  const raw = max / target;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const norm = raw / mag;
  return (norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 5 ? 5 : 10) * mag;
}

const fmt = (v: number) => (Number.isInteger(v) ? String(v) : v.toFixed(1));

export function lineChartSvg(spec: ChartSpec): string {
  const W = spec.width ?? 960;
  const H = spec.height ?? 460;
  const m = { left: 70, right: 200, top: spec.subtitle ? 64 : 48, bottom: 56 };
  const pw = W - m.left - m.right;
  const ph = H - m.top - m.bottom;
  const dataMax = Math.max(1, ...spec.series.flatMap((s) => s.values.filter(Number.isFinite)));
  const yStep = niceStep(dataMax);
  const yMax = Math.ceil((dataMax * 1.05) / yStep) * yStep;
  const xMax = Math.max(spec.xStep, spec.xMax);
  const xStepTick = niceStep(xMax, 10);
  const x = (v: number) => m.left + (v / xMax) * pw;
  const y = (v: number) => m.top + ph - (v / yMax) * ph;
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`);
  out.push(`<rect width="${W}" height="${H}" fill="#ffffff"/>`);
  out.push(`<text x="${m.left}" y="24" font-size="16" font-weight="bold">${esc(spec.title)}</text>`);
  if (spec.subtitle) out.push(`<text x="${m.left}" y="44" fill="#555">${esc(spec.subtitle)}</text>`);

  for (const w of spec.shaded ?? []) {
    const x0 = x(Math.max(0, w.from));
    const x1 = x(Math.min(xMax, w.to));
    out.push(`<rect x="${x0.toFixed(1)}" y="${m.top}" width="${Math.max(1, x1 - x0).toFixed(1)}" height="${ph}" fill="#f2c94c" fill-opacity="0.25"/>`);
    out.push(`<text x="${(x0 + 4).toFixed(1)}" y="${m.top + 14}" fill="#8a6d00">${esc(w.label)}</text>`);
  }

  // Grid and y ticks.
  for (let v = 0; v <= yMax + 1e-9; v += yStep) {
    out.push(`<line x1="${m.left}" x2="${m.left + pw}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}" stroke="#e5e5e5"/>`);
    out.push(`<text x="${m.left - 8}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end">${fmt(v)}</text>`);
  }
  for (let v = 0; v <= xMax + 1e-9; v += xStepTick) {
    out.push(`<line x1="${x(v).toFixed(1)}" x2="${x(v).toFixed(1)}" y1="${m.top + ph}" y2="${m.top + ph + 5}" stroke="#333"/>`);
    out.push(`<text x="${x(v).toFixed(1)}" y="${m.top + ph + 18}" text-anchor="middle">${fmt(v)}</text>`);
  }
  // Axes.
  out.push(`<line x1="${m.left}" x2="${m.left}" y1="${m.top}" y2="${m.top + ph}" stroke="#333"/>`);
  out.push(`<line x1="${m.left}" x2="${m.left + pw}" y1="${m.top + ph}" y2="${m.top + ph}" stroke="#333"/>`);
  out.push(`<text x="${m.left + pw / 2}" y="${H - 14}" text-anchor="middle">${esc(spec.xLabel)}</text>`);
  out.push(`<text transform="translate(18 ${m.top + ph / 2}) rotate(-90)" text-anchor="middle">${esc(spec.yLabel)}</text>`);

  for (const s of spec.series) {
    if (s.values.length === 0) continue;
    const pts = s.values.map((v, i) => `${x((i + 0.5) * spec.xStep).toFixed(1)},${y(Number.isFinite(v) ? v : 0).toFixed(1)}`).join(" ");
    out.push(
      `<polyline points="${pts}" fill="none" stroke="${s.color}" stroke-width="${s.width ?? 2}"${s.dashed ? ' stroke-dasharray="6 4"' : ""} stroke-linejoin="round"/>`,
    );
  }

  // Legend.
  const lx = m.left + pw + 16;
  spec.series.forEach((s, i) => {
    const ly = m.top + 10 + i * 20;
    out.push(
      `<line x1="${lx}" x2="${lx + 26}" y1="${ly}" y2="${ly}" stroke="${s.color}" stroke-width="${s.width ?? 2}"${s.dashed ? ' stroke-dasharray="6 4"' : ""}/>`,
    );
    out.push(`<text x="${lx + 32}" y="${ly + 4}">${esc(s.label)}</text>`);
  });
  out.push("</svg>");
  return `${out.join("\n")}\n`;
}
