/** One sample of the Prometheus text format. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const line = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)(?:\s+\d+)?$/;
const label = /(\w+)="((?:[^"\\]|\\.)*)"/g;

/** Parses the Prometheus text exposition format (comments and bad lines are skipped). */
export function parsePrometheus(text: string): Sample[] {
  const out: Sample[] = [];
  for (const raw of text.split("\n")) {
    if (raw === "" || raw.startsWith("#")) continue;
    const m = line.exec(raw);
    if (!m) continue;
    const value = Number(m[3]);
    if (Number.isNaN(value)) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(label)) labels[l[1]!] = l[2]!;
    out.push({ name: m[1]!, labels, value });
  }
  return out;
}

/** Sum of the samples named `name` whose labels include all of `labels`. */
export function sumOf(samples: readonly Sample[], name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const s of samples) {
    if (s.name !== name) continue;
    if (Object.entries(labels).every(([k, v]) => s.labels[k] === v)) sum += s.value;
  }
  return sum;
}
