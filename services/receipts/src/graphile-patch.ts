import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Logger, reportUnpatched } from "@platform/runtime";

/**
 * The fixes patches/graphile-worker+0.18.0.patch makes, each known by the
 * comment it leaves in graphile-worker's installed source: two to the
 * batcher in dist/main.js, one to the local queue in dist/localQueue.js.
 * Both are internal (nothing exported can be called to see how they
 * behave), so their installed source is what can be checked; what the
 * fixes do is held by queue-outage.spec.ts and queue-release.spec.ts.
 */
const fixes = [
  { file: "main.js", marker: "graphile/worker#636", problem: "a failed write of jobs' outcomes is not retried (graphile/worker#636)" },
  {
    file: "main.js",
    marker: "every holdup() is matched by",
    problem: "the batcher's backpressure is not cleared: after a second failed write the runner neither works nor stops",
  },
  {
    file: "localQueue.js",
    marker: "patches/README.md): the promise refused",
    problem: "a released local queue loses the promise that hands its jobs back: when that fails, an unhandled rejection",
  },
] as const;

/** What is missing from the installed graphile-worker; empty when the patch is in. `dir`: its dist/ folder. */
export function graphilePatchProblems(dir: string = installedDist()): string[] {
  const problems: string[] = [];
  for (const file of new Set(fixes.map((f) => f.file))) {
    let source: string;
    try {
      source = readFileSync(join(dir, file), "utf8");
    } catch (e) {
      problems.push(`graphile-worker's ${join(dir, file)} cannot be read (${String(e)})`);
      continue;
    }
    for (const f of fixes) if (f.file === file && !source.includes(f.marker)) problems.push(f.problem);
  }
  return problems;
}

function installedDist(): string {
  // The package's entry is dist/index.js; the batcher and the local queue live beside it.
  return dirname(fileURLToPath(import.meta.resolve("graphile-worker")));
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
