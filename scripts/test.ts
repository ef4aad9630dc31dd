/**
 * `npm test`: biome (format and lint of the TypeScript), proto lint, format and breaking-change check (against main), type check, then every test file
 * (unit tests beside the code as *.spec.ts, integration and end-to-end tests
 * under test/ as *.test.ts) with node's test runner, several files at a time.
 *
 *   npm test                       everything
 *   npm test -- path/to/x.test.ts  only the given files
 *   npm test -- --changed          only the files a change since main can affect (scripts/test-selection.ts)
 *   TEST_TIMINGS=<file> npm test   also each check's and file's wall and CPU seconds (scripts/test-timings.ts)
 *   PLATFORM_SERVICES_FROM=source npm test   test platforms run the services' sources through tsx (default: build, then dist/)
 *   TEST_TMPDIR=<dir> npm test     temporary files there (default: a tmpfs folder where /dev/shm allows, scripts/test-tmpdir.ts)
 *
 * Files run in parallel (TEST_CONCURRENCY, default twice the cores, at most 8): most
 * of a test file's time is spent waiting on other processes (a platform's
 * services, PostgreSQL, a fault's duration), not on this machine's cores.
 * The heaviest files start first, so that the run does not end waiting for
 * one that started last. The end-to-end files that only read share one
 * platform, started once for the run (scripts/run-test-files.ts, packages/test-support).
 *
 * At the end it lists every failing, skipped and todo test. With CI set
 * (CI=true), a skipped or todo test fails the run unless
 * test/skip-allowlist.json names it with a reason: node's runner exits 0 on
 * skips, and a check that silently stops running is a check that cannot fail.
 */
import "../packages/launcher/src/require-node.js";
import { portReservationsDir } from "../packages/embedded-postgres/src/free-port.js";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { ownProcessMarker } from "./shared-process.js";
import { readSkipAllowlist, summarizeTap, unlistedSkips } from "./test-summary.js";
import { chooseTestTmpdir, describeTmpdir, removeLeftovers } from "./test-tmpdir.js";
import { type FileTiming, formatTimings, sampleTree } from "./test-timings.js";

const root = process.cwd();
/** TEST_TIMINGS=<file>: write each check's and each test file's wall and CPU seconds there (JSON) and print the heaviest. */
const timingsFile = process.env["TEST_TIMINGS"];
const checkTimings: FileTiming[] = [];

/**
 * Every process of the run (the checks, the runner, the test files, their
 * platforms and PostgreSQL clusters) makes its temporary files in memory
 * where the machine allows it (scripts/test-tmpdir.ts).
 */
const testTmpdir = (() => {
  try {
    return chooseTestTmpdir();
  } catch (e) {
    process.stderr.write(`npm test: TEST_TMPDIR=${process.env["TEST_TMPDIR"]} cannot be used: ${(e as Error).message}\n`);
    process.exit(2);
  }
})();
if (testTmpdir !== undefined) {
  // Port reservations stay where every other process on the machine looks for them (free-port.ts).
  process.env["PLATFORM_PORT_RESERVATIONS"] = portReservationsDir();
  process.env["TMPDIR"] = testTmpdir.dir;
}
const leftovers = testTmpdir?.ours ? removeLeftovers(testTmpdir.dir) : [];
process.stdout.write(`npm test: ${describeTmpdir(testTmpdir)}${leftovers.length > 0 ? `; removed ${leftovers.length} entries left by killed runs` : ""}\n`);

interface Check {
  title: string;
  cmd: string;
  args: string[];
}

/**
 * The checks before the tests, all at once: they are independent, and
 * one at a time the cores idle while one of them waits on its disk or on
 * git. Each one's output is held and printed whole, in the listed order,
 * so the log reads as if they had run one after another; the first
 * failure (in that order) ends the run with its status.
 */
async function runChecks(checks: Check[]): Promise<void> {
  const titleOf = new Map<number, string>();
  const sampler = timingsFile === undefined ? undefined : sampleTree((pid) => titleOf.get(pid), "(npm test)");
  const started = Date.now();
  const results = await Promise.all(
    checks.map(
      (c) =>
        new Promise<{ check: Check; output: string; status: number | string; wallSeconds: number }>((done) => {
          const child = spawn(c.cmd, c.args, { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
          if (child.pid !== undefined) titleOf.set(child.pid, `(check) ${c.title}`);
          const chunks: Buffer[] = [];
          child.stdout.on("data", (b: Buffer) => chunks.push(b));
          child.stderr.on("data", (b: Buffer) => chunks.push(b));
          child.on("error", (e) => done({ check: c, output: `${e.message}\n`, status: "not started", wallSeconds: 0 }));
          child.on("close", (code, signal) =>
            done({ check: c, output: Buffer.concat(chunks).toString(), status: code ?? signal ?? 1, wallSeconds: (Date.now() - started) / 1000 }),
          );
        }),
    ),
  );
  if (sampler) {
    const cpu = new Map(sampler.stop().map((t) => [t.file, t.cpuSeconds]));
    for (const r of results)
      checkTimings.push({
        file: `(check) ${r.check.title}`,
        startSeconds: 0,
        wallSeconds: r.wallSeconds,
        cpuSeconds: cpu.get(`(check) ${r.check.title}`) ?? 0,
      });
    checksWallSeconds = (Date.now() - started) / 1000;
  }
  for (const r of results) {
    process.stdout.write(`\n== ${r.check.title}\n${r.output}`);
    if (r.status !== 0) {
      process.stdout.write(`\n${r.check.title} failed (exit ${r.status})\n`);
      process.exit(typeof r.status === "number" ? r.status : 1);
    }
  }
}

let checksWallSeconds: number | undefined;
function checkPhase(): Record<string, number> {
  return checksWallSeconds === undefined ? {} : { checks: checksWallSeconds };
}

function findTests(dir: string, suffix: string): string[] {
  return readdirSync(join(root, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith(suffix) && !e.parentPath.includes("node_modules"))
    .map((e) => relative(root, join(e.parentPath, e.name)))
    .sort();
}

const args = process.argv.slice(2);
const changedOnly = args.includes("--changed");
const only = args.filter((a) => a !== "--changed");
const allTests = [
  ...findTests("packages", ".spec.ts"),
  ...findTests("services", ".spec.ts"),
  ...findTests("lab", ".spec.ts"),
  ...findTests("test", ".test.ts"),
];
let files = only.length > 0 ? only : allTests;
const missing = only.filter((f) => !existsSync(resolve(root, f)));
if (missing.length > 0) {
  process.stderr.write(`npm test: no such test file: ${missing.join(", ")}\n`);
  process.exit(2);
}
if (changedOnly) {
  if (only.length > 0) {
    process.stderr.write("npm test: --changed selects the files itself; give it no file names\n");
    process.exit(2);
  }
  // Imported here only: the selection reads imports with the TypeScript compiler, whose
  // module alone is 0.7 CPU seconds to load, and every other run would pay for it.
  const { changedSinceMain, selectTests } = await import("./test-selection.js");
  const { base, files: changed } = changedSinceMain(root);
  const selection = selectTests(root, changed, allTests);
  process.stdout.write(`\n== --changed: ${changed.length} files changed since ${base}\n`);
  if (selection.all) process.stdout.write(`every test file: ${selection.why}\n`);
  else {
    files = selection.files;
    process.stdout.write(`${files.length} of ${allTests.length} test files:\n${files.map((f) => `  ${f}\n`).join("")}`);
    if (files.length === 0) process.exit(0);
  }
}

/**
 * The test platforms start each service from its compiled dist/main.js
 * (about half the CPU of a start under tsx, and a run starts hundreds), so
 * the build runs before any test file, every time: transpiling every
 * workspace takes a few CPU seconds and rewrites only what changed, and a
 * stale dist/ must never be what a test runs. PLATFORM_SERVICES_FROM=source
 * runs the services from their sources through tsx instead, without
 * building (startTestPlatform reads it: packages/test-support, services-form.ts).
 */
const servicesFrom = process.env["PLATFORM_SERVICES_FROM"] || "build";
if (servicesFrom !== "build" && servicesFrom !== "source") {
  process.stderr.write(`npm test: PLATFORM_SERVICES_FROM must be "build" or "source", got ${JSON.stringify(servicesFrom)}\n`);
  process.exit(2);
}
const build: Check = { title: "build (dist/, what the test platforms run)", cmd: process.execPath, args: ["--import", "tsx", "scripts/build.ts"] };
const buildChecks = servicesFrom === "build" ? [build] : [];

if (only.length === 0 && !changedOnly) {
  // The tools from node_modules/.bin directly: npx would cost a node start-up each.
  const bin = (name: string) => join(root, "node_modules", ".bin", name);
  await runChecks([
    { title: "biome (format and lint)", cmd: bin("biome"), args: ["check", "."] },
    { title: "buf lint", cmd: bin("buf"), args: ["lint"] },
    { title: "buf format", cmd: bin("buf"), args: ["format", "--diff", "--exit-code"] },
    { title: "buf breaking", cmd: process.execPath, args: ["--import", "tsx", "scripts/proto-breaking.ts"] },
    // TypeScript 7's checker (native): the same verdicts as 5.9's on this tree, a fifth of the CPU (docs/testing.md, "Two TypeScripts, one checker").
    { title: "typecheck", cmd: process.execPath, args: [join(root, "node_modules", "typescript-7", "bin", "tsc"), "--noEmit", "-p", "tsconfig.json"] },
    ...buildChecks,
  ]);
} else await runChecks(buildChecks);
// Inherited by the runner, the test files and the platforms they start.
process.env["PLATFORM_SERVICES_FROM"] = servicesFrom;

/**
 * The run's output goes to the terminal as it comes (node's spec reporter on
 * a terminal, TAP in a log); a second TAP copy goes to a file for the summary.
 * Failures and skips are repeated at the end, because a long run's log is
 * often read from its tail (CI keeps the last few kilobytes).
 */
function runTests(title: string, runnerArgs: string[]): void {
  process.stdout.write(`\n== ${title}\n`);
  const dir = mkdtempSync(join(tmpdir(), "npm-test-"));
  const tapFile = join(dir, "run.tap");
  const timingArgs = timingsFile === undefined ? [] : ["--timings", join(dir, "timings.json")];
  const r = spawnSync(process.execPath, ["--import", "tsx", "scripts/run-test-files.ts", "--tap", tapFile, ...timingArgs, ...runnerArgs], {
    stdio: "inherit",
    cwd: root,
  });
  const summary = summarizeTap(readFileSync(tapFile, "utf8"));
  if (timingsFile !== undefined && existsSync(join(dir, "timings.json"))) {
    const { phases, files } = JSON.parse(readFileSync(join(dir, "timings.json"), "utf8")) as { phases: Record<string, number>; files: FileTiming[] };
    const all = [...checkTimings, ...files];
    writeFileSync(timingsFile, JSON.stringify({ phases: { ...checkPhase(), ...phases }, files: all }, null, 2));
    process.stdout.write(`\n== timings (wall s by phase: ${JSON.stringify({ ...checkPhase(), ...phases })}; all in ${timingsFile})\n`);
    process.stdout.write(
      formatTimings(
        all
          .slice()
          .sort((a, b) => b.cpuSeconds - a.cpuSeconds)
          .slice(0, 15),
        root,
      ),
    );
    process.stdout.write(
      `${all
        .reduce((s, t) => s + t.cpuSeconds, 0)
        .toFixed(1)
        .padStart(7)}          total CPU of the run\n`,
    );
  }
  rmSync(dir, { recursive: true, force: true });
  const section = (heading: string, lines: string[]) => {
    if (lines.length > 0) process.stdout.write(`\n== ${heading} (${lines.length})\n${lines.map((l) => `${l}\n`).join("")}`);
  };
  section("failing tests", summary.failures);
  section("skipped tests", summary.skipped);
  section("todo tests", summary.todo);
  if (r.status !== 0) {
    process.stdout.write(`\n${title} failed (exit ${r.status ?? r.signal})\n`);
    process.exit(r.status ?? 1);
  }
  if (process.env["CI"]) {
    const unlisted = unlistedSkips(summary, readSkipAllowlist(join(root, "test/skip-allowlist.json")));
    if (unlisted.length > 0) {
      process.stdout.write(
        `\n${title} failed: with CI set, these were skipped or left todo and test/skip-allowlist.json does not name them:\n${unlisted.map((n) => `  ${n}\n`).join("")}`,
      );
      process.exit(1);
    }
  }
}

/**
 * The order files start in: a file whose wall time its length does not show
 * (it runs fixed windows of load on platforms of its own) says so with a
 * line `// npm test: first (why)` and starts before the others; then the
 * files under test/, the largest first (with files running in parallel, the
 * run's length is at least its longest file's, plus whatever started after
 * it), then the specs.
 */
function heaviestFirst(list: string[]): string[] {
  const weight = (f: string) => {
    const text = readFileSync(resolve(root, f), "utf8");
    return (/^\/\/ npm test: first\b/m.test(text) ? 2e9 : f.startsWith("test/") ? 1e9 : 0) + text.length;
  };
  return [...list].sort((a, b) => weight(b) - weight(a) || a.localeCompare(b));
}

/**
 * The parallel phase's queue: heaviestFirst, except that the specs that
 * keep a process of their own go right after the files that start at once
 * with the shared spec processes (those hold slots of their own). Each of
 * them is a few seconds of mostly waiting on timeouts and servers of its
 * own. Last in the queue, one of them (create-database, 8.5 s) would be the
 * phase's tail with the cores idle; first, they would hold the free slots
 * for half a minute while the generator test, the longest file, waits to
 * start, and the cores would be a quarter idle.
 */
function parallelQueue(list: string[], slots: number): string[] {
  const ordered = heaviestFirst(list);
  const ownSpecs = ordered.filter((f) => f.endsWith(".spec.ts"));
  const files = ordered.filter((f) => !f.endsWith(".spec.ts"));
  return [...files.slice(0, slots), ...ownSpecs, ...files.slice(slots)];
}

/**
 * Twice the cores, at most 8: an end-to-end file runs a platform of five
 * processes (about 1 GB resident), so memory, not cores, bounds it above.
 */
const concurrency = Number(process.env["TEST_CONCURRENCY"] ?? Math.min(availableParallelism() * 2, 8));
if (!Number.isInteger(concurrency) || concurrency < 1) {
  process.stderr.write(`npm test: TEST_CONCURRENCY must be a whole number of files at a time, at least 1, got ${process.env["TEST_CONCURRENCY"]}\n`);
  process.exit(2);
}
/** The run's shared platform is started only if a selected file uses it. */
const usesSharedPlatform = files.some((f) => readFileSync(resolve(root, f), "utf8").includes("sharedPlatform()"));
/**
 * A file that measures the machine (capacity, rates, latency ratios under
 * the load it makes itself) says so with a line `// npm test: alone (why)`
 * and runs after the others, by itself: its bounds were set for a machine
 * not shared with the rest of the suite.
 */
const alone = files.filter((f) => /^\/\/ npm test: alone\b/m.test(readFileSync(resolve(root, f), "utf8")));
/**
 * Of those, a file whose bounds hold on a machine of one core says so with
 * `// npm test: alone on one core (why)`: such files run first, two at a
 * time, each pinned to its own half of the cores, with nothing else
 * running (scripts/run-test-files.ts, one-core-lane.ts).
 */
const aloneOnOneCore = alone.filter((f) => /^\/\/ npm test: alone on one core\b/m.test(readFileSync(resolve(root, f), "utf8")));
/**
 * The unit specs share processes, a group to each (scripts/shared-process.ts):
 * most of a small spec's cost is starting node, tsx and its imports. Two
 * groups: each loads the module graph once, and the two run beside the
 * end-to-end files' tail. A spec with a line `// npm test: own process (why)`
 * keeps a process of its own.
 */
const sharedProcesses = 2;
const shared = files.filter((f) => !alone.includes(f) && f.endsWith(".spec.ts") && !ownProcessMarker.test(readFileSync(resolve(root, f), "utf8")));
const together = files.filter((f) => !alone.includes(f) && !shared.includes(f));
const sharedNote = shared.length > 0 ? `, ${shared.length} specs of them in ${Math.min(sharedProcesses, shared.length)} shared processes` : "";

const oneCoreNote = aloneOnOneCore.length > 0 ? ` (${aloneOnOneCore.length} of them two at a time, a core each)` : "";
runTests(`tests (${files.length} files, ${concurrency} at a time${sharedNote}${alone.length > 0 ? `, then ${alone.length} alone${oneCoreNote}` : ""})`, [
  "--concurrency",
  String(concurrency),
  ...(usesSharedPlatform ? ["--shared-platform"] : []),
  "--shared-processes",
  String(sharedProcesses),
  ...shared.flatMap((f) => ["--shared", f]),
  ...heaviestFirst(aloneOnOneCore).flatMap((f) => ["--alone-one-core", f]),
  ...heaviestFirst(alone.filter((f) => !aloneOnOneCore.includes(f))).flatMap((f) => ["--alone", f]),
  ...parallelQueue(together, Math.max(1, concurrency - Math.min(sharedProcesses, shared.length))),
]);
