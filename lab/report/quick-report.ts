import { join } from "node:path";
import type { RunResult } from "../analyze.js";
import { scenarios } from "../scenarios.js";
import { fullReport } from "./table.js";
import { writeReport } from "./write-report.js";

/**
 * A quick run's results, as the storm lab's test files leave them: the
 * table on stdout (each line marked `[storm]`) and the report (charts,
 * tables, JSON, index.html) in reports/storm/<name>/; `help` is the
 * column help written under the table.
 */
export function reportQuickRun(results: readonly RunResult[], name: string, help: readonly string[]): void {
  const table = fullReport(results);
  console.log(`[storm]\n${table}`);
  writeReport(
    join(process.cwd(), "reports", "storm", name),
    results,
    table,
    Object.fromEntries(scenarios.map((s) => [s.name, s.title])),
    { generatedAt: new Date().toISOString(), quick: true },
    help,
  );
}
