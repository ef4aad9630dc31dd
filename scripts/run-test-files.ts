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
 *   node --import tsx scripts/run-test-files.ts --concurrency <n> --tap <file> [--shared-platform] [--timings <file>]
 *     [--shared-processes <n> --shared <spec>...] [--alone <file>]... <file>...
 *
 * The --shared specs run in --shared-processes processes, a group to each,
 * one spec after another (scripts/shared-process.ts); the groups start
 * first: each is a chain of some fifty specs (about 45 s of wall, a third
 * of it CPU), which started after the test/ files left the phase's last
 * 20-25 s with the cores mostly idle. The --alone-one-core files run after
 * them, two at a time, each on its own half of the cores; the --alone
 * files last, one at a time. --timings writes
 * each file's wall and CPU seconds (scripts/test-timings.ts) and each
 * phase's wall seconds as JSON.
 *
 * Output: node's spec reporter on a terminal, TAP otherwise, on stdout; a
 * TAP copy in the --tap file for the summary. Exits 1 if a test failed.
 */
import { createWriteStream, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { finished } from "node:stream/promises";
import { parseArgs } from "node:util";
import { run } from "node:test";
import { spec, tap } from "node:test/reporters";
import { coreHalves } from "../packages/test-support/src/cpu-affinity.js";
import { partition, writeSharedProcessEntry } from "./shared-process.js";
import { type FileTiming, startTimings } from "./test-timings.js";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    concurrency: { type: "string" },
    tap: { type: "string" },
    "shared-platform": { type: "boolean", default: false },
    alone: { type: "string", multiple: true, default: [] },
    "alone-one-core": { type: "string", multiple: true, default: [] },
    shared: { type: "string", multiple: true, default: [] },
    "shared-processes": { type: "string", default: "1" },
    timings: { type: "string" },
  },
});
const concurrency = Number(values.concurrency);
const sharedProcesses = Number(values["shared-processes"]);
if (
  !Number.isInteger(concurrency) ||
  concurrency < 1 ||
  !Number.isInteger(sharedProcesses) ||
  sharedProcesses < 1 ||
  values.tap === undefined ||
  positionals.length + values.alone.length + values["alone-one-core"].length + values.shared.length === 0
) {
  process.stderr.write(
    "usage: node --import tsx scripts/run-test-files.ts --concurrency <n> --tap <file> [--shared-platform] [--timings <file>] [--shared-processes <n> --shared <spec>...] [--alone-one-core <file>]... [--alone <file>]... <file>...\n",
  );
  process.exit(2);
}

/** The shared processes' entry files. */
const entriesDir = mkdtempSync(join(tmpdir(), "npm-test-shared-"));
const sharedGroups = partition(
  values.shared.map((f) => resolve(f)),
  (f) => readFileSync(f, "utf8").length,
  sharedProcesses,
).map((files, i) => ({ files, entry: writeSharedProcessEntry(entriesDir, i + 1, files, process.cwd()) }));
const together = [...sharedGroups.map((g) => g.entry), ...positionals.map((f) => resolve(f))];

const tapFile = createWriteStream(values.tap);
const oneCore = values["alone-one-core"].map((f) => resolve(f));
const timings = values.timings === undefined ? undefined : startTimings([...together, ...oneCore, ...values.alone.map((f) => resolve(f))]);

/** A shared process's line, named for what it ran (its entry file is a temporary path). */
function nameSharedProcesses(files: FileTiming[]): FileTiming[] {
  return files.map((t) => {
    const i = sharedGroups.findIndex((g) => g.entry === t.file);
    return i === -1 ? t : { ...t, file: `(shared process ${i + 1}: ${sharedGroups[i]?.files.length} specs)` };
  });
}
const phases: Record<string, number> = {};
const flushBeforeExit = new URL("./flush-before-exit.ts", import.meta.url).href;
const phaseStart = Date.now();

const oneCoreLane = new URL("./one-core-lane.ts", import.meta.url).href;

/**
 * One run() over `files`, `concurrency` at a time, reported to the terminal
 * and the TAP file; with `lanes`, each file's process pins itself to a free
 * one of them (scripts/one-core-lane.ts).
 */
async function runFiles(files: string[], concurrency: number, lanes?: { dir: string; cores: readonly string[] }): Promise<void> {
  if (files.length === 0) return;
  // forceExit: a file whose tests are done but that left a timer or a server open ends instead of holding the run;
  // flush-before-exit.ts: without losing the last results that file's process sent.
  const stream = run({
    files: files.map((f) => resolve(f)),
    concurrency,
    timeout: 300_000,
    forceExit: true,
    execArgv: ["--import", flushBeforeExit, ...(lanes ? ["--import", oneCoreLane] : [])],
    ...(lanes ? { env: { ...process.env, TEST_CORE_LANES: `${lanes.dir}:${lanes.cores.join(";")}` } } : {}),
  });
  stream.on("test:fail", (event: { todo?: boolean | string }) => {
    if (!event.todo) process.exitCode = 1;
  });
  const toTerminal = stream.compose(process.stdout.isTTY ? new spec() : tap);
  toTerminal.pipe(process.stdout, { end: false });
  const toFile = stream.compose(tap);
  toFile.pipe(tapFile, { end: false });
  await Promise.all([finished(toTerminal), finished(toFile)]);
}

// Imported only when asked for: the platform's modules (Connect, pg, the launcher) cost a run that
// starts no platform half a CPU second (test/test-runner.test.ts runs this script a dozen times).
const sharedPlatform = values["shared-platform"] ? await import("../packages/test-support/src/shared-platform-server.js") : undefined;
await sharedPlatform?.globalSetup();
try {
  await runFiles(together, concurrency);
} finally {
  await sharedPlatform?.globalTeardown();
}
phases["parallel"] = (Date.now() - phaseStart) / 1000;
// The files that measure the machine (capacity, rates, latency ratios under load): nothing else
// running. Those whose claims hold on one core run first, two at a time, each pinned to its own
// half of the cores (where the machine has two halves and taskset); the others one at a time.
const halves = coreHalves();
if (halves && oneCore.length > 1) {
  const dir = mkdtempSync(join(tmpdir(), "npm-test-lanes-"));
  try {
    await runFiles(oneCore, halves.length, { dir, cores: halves });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  await runFiles(values.alone, 1);
} else await runFiles([...oneCore, ...values.alone], 1);
phases["alone"] = (Date.now() - phaseStart) / 1000 - (phases["parallel"] ?? 0);
if (timings && values.timings !== undefined) writeFileSync(values.timings, JSON.stringify({ phases, files: nameSharedProcesses(timings.stop()) }, null, 2));
rmSync(entriesDir, { recursive: true, force: true });
tapFile.end();
await finished(tapFile);
