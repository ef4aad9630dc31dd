import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { RunInfo } from "./render.js";
import type { BenchRun } from "./run-bench.js";
import type { BenchSummary } from "./summarize.js";

/**
 * reports/bench/<time>/: bench.json (summary, run info, every leg without
 * its latency samples) and table.txt; and, when given, the markdown table.
 * Returns the paths written.
 */
export function writeBenchFiles(opts: {
  dir: string;
  run: BenchRun;
  summary: BenchSummary;
  text: string;
  info: RunInfo;
  markdown?: { path: string; content: string } | undefined;
}): string[] {
  mkdirSync(opts.dir, { recursive: true });
  const legs = opts.run.legs.map(({ latenciesMs: _samples, ...rest }) => rest);
  const json = join(opts.dir, "bench.json");
  writeFileSync(json, `${JSON.stringify({ info: opts.info, options: opts.run.options, summary: opts.summary, legs }, null, 2)}\n`);
  const table = join(opts.dir, "table.txt");
  writeFileSync(table, `${opts.info.command}\n${opts.info.commit}, ${opts.info.date}\n\n${opts.text}\n`);
  const written = [json, table];
  if (opts.markdown) {
    mkdirSync(dirname(opts.markdown.path), { recursive: true });
    writeFileSync(opts.markdown.path, opts.markdown.content);
    written.push(opts.markdown.path);
  }
  return written;
}
