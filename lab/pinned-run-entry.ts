/**
 * One storm lab run in a process of its own (lab/pinned-runs.ts starts it
 * under taskset): runs the scenario's variant, analyses it and writes the
 * result, v8-serialized, to the file named by its second argument. Log
 * lines on stdout; a failure on stderr with exit status 1.
 *
 *   node --import tsx lab/pinned-run-entry.ts '<PinnedJob as JSON>' <result file>
 */
import { writeFileSync } from "node:fs";
import { serialize } from "node:v8";
import { analyze } from "./analyze.js";
import type { PinnedJob } from "./pinned-runs.js";
import { runScenario } from "./run-scenario.js";
import { scenarioNamed } from "./scenarios.js";

const [jobText, out] = process.argv.slice(2);
if (jobText === undefined || out === undefined) {
  process.stderr.write("usage: node --import tsx lab/pinned-run-entry.ts '<job JSON>' <result file>\n");
  process.exit(2);
}
const job = JSON.parse(jobText) as PinnedJob;
try {
  const raw = await runScenario(scenarioNamed(job.scenario), job.variant, { ...job.options, log: (line) => console.log(line) });
  writeFileSync(out, serialize(analyze(raw)));
} catch (e) {
  console.error(e);
  process.exitCode = 1;
}
