/**
 * One trace as a waterfall picture (SVG): a row per span in tree order,
 * indented under its parent, a bar for its time, and the deadline that was
 * left when it started. What Jaeger shows, in a file the README can embed.
 */
import { type ReceivedSpan, spanAttribute } from "./otlp-receiver.js";

const row = 22;
const labelWidth = 470;
const barWidth = 560;
const colours: Record<string, string> = { gateway: "#4c78a8", checkout: "#f58518", orders: "#54a24b", pricing: "#b279a2" };

const escapeXml = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
const nanos = (s: string) => BigInt(s);

/** Spans of one trace in depth-first order, each with its depth; children by start time. */
export function treeOrder(spans: ReceivedSpan[]): { item: ReceivedSpan; depth: number }[] {
  const ids = new Set(spans.map((s) => s.span.spanId));
  const children = new Map<string | undefined, ReceivedSpan[]>();
  for (const s of spans) {
    const parent = s.span.parentSpanId && ids.has(s.span.parentSpanId) ? s.span.parentSpanId : undefined;
    children.set(parent, [...(children.get(parent) ?? []), s]);
  }
  for (const list of children.values()) list.sort((a, b) => (nanos(a.span.startTimeUnixNano) < nanos(b.span.startTimeUnixNano) ? -1 : 1));
  const out: { item: ReceivedSpan; depth: number }[] = [];
  const visit = (parent: string | undefined, depth: number) => {
    for (const item of children.get(parent) ?? []) {
      out.push({ item, depth });
      visit(item.span.spanId, depth + 1);
    }
  };
  visit(undefined, 0);
  return out;
}

export function waterfallSvg(spans: ReceivedSpan[], title: string): string {
  const rows = treeOrder(spans);
  const start = rows.reduce(
    // biome-ignore lint/complexity/useMathMinMax: nanosecond timestamps are bigints, which Math.min does not take
    (m, r) => (nanos(r.item.span.startTimeUnixNano) < m ? nanos(r.item.span.startTimeUnixNano) : m),
    nanos(rows[0]!.item.span.startTimeUnixNano),
  );
  // biome-ignore lint/complexity/useMathMinMax: as above
  const end = rows.reduce((m, r) => (nanos(r.item.span.endTimeUnixNano) > m ? nanos(r.item.span.endTimeUnixNano) : m), 0n);
  const totalMs = Number(end - start) / 1e6;
  const x = (t: string) => labelWidth + (Number(nanos(t) - start) / 1e6 / totalMs) * barWidth;
  const height = 48 + rows.length * row + 28;
  const width = labelWidth + barWidth + 190;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="ui-monospace, Menlo, monospace" font-size="12">`,
    `<rect width="100%" height="100%" fill="#ffffff"/>`,
    `<text x="10" y="20" font-size="14" font-weight="bold">${escapeXml(title)}</text>`,
    `<text x="10" y="38" fill="#555">${rows.length} spans, ${totalMs.toFixed(1)} ms; right: deadline left when the span started</text>`,
  ];
  rows.forEach(({ item, depth }, i) => {
    const y = 48 + i * row;
    const s = item.span;
    const kind = s.kind === 2 ? "server" : s.kind === 3 ? "client" : "internal";
    const label = `${item.service} ${kind === "client" && spanAttribute(s, "db.system.name") ? "sql" : kind}: ${s.name}`;
    const x0 = x(s.startTimeUnixNano);
    const w = Math.max(1.5, x(s.endTimeUnixNano) - x0);
    const ms = Number(nanos(s.endTimeUnixNano) - nanos(s.startTimeUnixNano)) / 1e6;
    const deadline = spanAttribute(s, "deadline.remaining_ms");
    const failed = s.status?.code === 2;
    parts.push(
      `<text x="${10 + depth * 14}" y="${y + 15}">${escapeXml(label.length > 62 - depth * 2 ? `${label.slice(0, 60 - depth * 2)}…` : label)}</text>`,
      `<rect x="${x0.toFixed(1)}" y="${y + 4}" width="${w.toFixed(1)}" height="${row - 8}" rx="2" fill="${failed ? "#e45756" : (colours[item.service] ?? "#888")}"${kind === "client" ? ' fill-opacity="0.55"' : ""}/>`,
      `<text x="${(x0 + w + 4).toFixed(1)}" y="${y + 15}" fill="#333">${ms.toFixed(2)} ms</text>`,
      deadline !== undefined ? `<text x="${labelWidth + barWidth + 180}" y="${y + 15}" text-anchor="end" fill="#555">${deadline} ms</text>` : "",
    );
  });
  parts.push(
    `<text x="10" y="${height - 10}" fill="#555">solid: server spans; light: client calls and SQL statements (db.query.text in the span)</text>`,
    "</svg>",
  );
  return `${parts.filter(Boolean).join("\n")}\n`;
}
