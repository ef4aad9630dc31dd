/**
 * The test files of `npm test`, run by node's test runner through its
 * run() API rather than `node --test`, for two reasons:
 *
 * - order: `node --test` sorts the files it is given by name, which starts
 *   the end-to-end files under test/ last; run() starts them in the order
 *   given (scripts/test.ts puts the heaviest first);
 * - the run's shared platform (packages/test-support, shared-platform.ts):
 *   started here, in the runner's process, before the files and stopped
 *   after the last one, as node's --test-global-setup would, with this
 *   process's `--import tsx` in effect.
 *
 *   node --import tsx scripts/run-test-files.ts --concurrency <n> --tap <file> [--shared-platform] [--timings <file>] [--alone <file>]... <file>...
 *
 * The --alone files run after the others, one at a time. --timings writes
 * each file's wall and CPU seconds (scripts/test-timings.ts) and each
 * phase's wall seconds as JSON.
 *
 * Output: node's spec reporter on a terminal, TAP otherwise, on stdout; a
 * TAP copy in the --tap file for the summary. Exits 1 if a test failed.
 */
import { createWriteStream, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { finished } from "node:stream/promises";
import { parseArgs } from "node:util";
import { run } from "node:test";
import { spec, tap } from "node:test/reporters";
import { globalSetup, globalTeardown } from "../packages/test-support/src/shared-platform-server.js";
import { startTimings } from "./test-timings.js";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    concurrency: { type: "string" },
    tap: { type: "string" },
    "shared-platform": { type: "boolean", default: false },
    alone: { type: "string", multiple: true, default: [] },
    timings: { type: "string" },
  },
});
const concurrency = Number(values.concurrency);
if (!Number.isInteger(concurrency) || concurrency < 1 || values.tap === undefined || positionals.length + values.alone.length === 0) {
  process.stderr.write("usage: node --import tsx scripts/run-test-files.ts --concurrency <n> --tap <file> [--shared-platform] [--alone <file>]... <file>...\n");
  process.exit(2);
}

const tapFile = createWriteStream(values.tap);
const timings = values.timings === undefined ? undefined : startTimings([...positionals, ...values.alone].map((f) => resolve(f)));
const phases: Record<string, number> = {};
const phaseStart = Date.now();

/** One run() over `files`, `concurrency` at a time, reported to the terminal and the TAP file. */
async function runFiles(files: string[], concurrency: number): Promise<void> {
  if (files.length === 0) return;
  const stream = run({ files: files.map((f) => resolve(f)), concurrency, timeout: 300_000 });
  stream.on("test:fail", (event: { todo?: boolean | string }) => {
    if (!event.todo) process.exitCode = 1;
  });
  const toTerminal = stream.compose(process.stdout.isTTY ? new spec() : tap);
  toTerminal.pipe(process.stdout, { end: false });
  const toFile = stream.compose(tap);
  toFile.pipe(tapFile, { end: false });
  await Promise.all([finished(toTerminal), finished(toFile)]);
}

if (values["shared-platform"]) await globalSetup();
try {
  await runFiles(positionals, concurrency);
} finally {
  if (values["shared-platform"]) await globalTeardown();
}
phases["parallel"] = (Date.now() - phaseStart) / 1000;
// The files that measure the machine (capacity, rates, latency ratios under load): one at a time, nothing else running.
await runFiles(values.alone, 1);
phases["alone"] = (Date.now() - phaseStart) / 1000 - (phases["parallel"] ?? 0);
if (timings && values.timings !== undefined) writeFileSync(values.timings, JSON.stringify({ phases, files: timings.stop() }, null, 2));
tapFile.end();
await finished(tapFile);
