import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { type Logger, reportUnpatched } from "@platform/runtime";

/**
 * The two fixes patches/graphile-worker+0.18.0.patch makes to the batcher
 * in graphile-worker's dist/main.js, each known by the comment it leaves
 * there. The batcher is internal (nothing exported can be called to see how
 * it behaves), so its installed source is what can be checked; what the
 * fixes do is held by queue-outage.spec.ts.
 */
const fixes = [
  { marker: "graphile/worker#636", problem: "a failed write of jobs' outcomes is not retried (graphile/worker#636)" },
  {
    marker: "every holdup() is matched by",
    problem: "the batcher's backpressure is not cleared: after a second failed write the runner neither works nor stops",
  },
];

/** What is missing from the installed graphile-worker; empty when the patch is in. */
export function graphilePatchProblems(mainJs: string = installedMainJs()): string[] {
  let source: string;
  try {
    source = readFileSync(mainJs, "utf8");
  } catch (e) {
    return [`graphile-worker's ${mainJs} cannot be read (${String(e)})`];
  }
  return fixes.filter((f) => !source.includes(f.marker)).map((f) => f.problem);
}

function installedMainJs(): string {
  // The package's entry is dist/index.js; the batcher lives beside it.
  return fileURLToPath(new URL("./main.js", import.meta.resolve("graphile-worker")));
}

/**
 * Says loudly when graphile-worker runs without our patch (`reportUnpatched`,
 * as for connect-es). In production the service refuses to start: one
 * PostgreSQL restart under load would then stop every receipt for good while
 * the service reports itself ready.
 */
export function checkGraphilePatch(logger: Logger, env: Record<string, string | undefined> = process.env, problems: string[] = graphilePatchProblems()): void {
  reportUnpatched("graphile-worker", problems, logger, env);
}
