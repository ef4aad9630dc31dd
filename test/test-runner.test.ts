/**
 * `npm test`'s own runner (scripts/test.ts): a skipped or todo test is listed
 * in the closing summary next to the failures, and with CI set it fails the
 * run unless test/skip-allowlist.json names it with a reason; the phases
 * run in their order, the one-core pair on separate cores; the test files
 * get the run's temporary folder. Runs the real script on small test files
 * written here.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { coreHalves } from "@platform/test-support";
import { ownProcessMarker, partition } from "../scripts/shared-process.js";
import { readSkipAllowlist, summarizeTap, unlistedSkips } from "../scripts/test-summary.js";

/** Runs `npm test` on one sample test file, or on sample files named by `source`'s keys (*.spec.ts files share a process). */
function runNpmTest(source: string | Record<string, string>, env: Record<string, string | undefined>): { status: number | null; stdout: string } {
  const dir = mkdtempSync(join(tmpdir(), "runner-test-"));
  try {
    const sources = typeof source === "string" ? { "sample.test.ts": source } : source;
    const files = Object.entries(sources).map(([name, text]) => {
      writeFileSync(join(dir, name), text);
      return join(dir, name);
    });
    // Its sample files start no platform: no build first (scripts/test.ts builds dist/ unless told "source").
    const childEnv: NodeJS.ProcessEnv = { ...process.env, PLATFORM_SERVICES_FROM: "source", ...env };
    // Without the test runner's marker, so that the nested run reports normally.
    delete childEnv["NODE_TEST_CONTEXT"];
    // Nor the outer run's timings file: the nested run would write its own timings over it.
    delete childEnv["TEST_TIMINGS"];
    for (const [k, v] of Object.entries(env)) if (v === undefined) delete childEnv[k];
    // The timeout only ends a run that would hang, so that the test fails instead (status null).
    const r = spawnSync(process.execPath, ["--import", "tsx", "scripts/test.ts", ...files], { env: childEnv, encoding: "utf8", timeout: 240_000 });
    return { status: r.status, stdout: r.stdout };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const withSkipAndTodo = `
import { describe, test } from "node:test";
describe("outer", () => {
  test("runs", () => {});
  test("left out", { skip: "no tool here" }, () => {});
  test("not written yet", { todo: true }, () => {});
});
`;

test("without CI: skips and todos pass the run and are listed in the summary", () => {
  const r = runNpmTest(withSkipAndTodo, { CI: undefined });
  assert.equal(r.status, 0, r.stdout.slice(-2000));
  assert.match(r.stdout, /== skipped tests \(1\)\nouter > left out # SKIP no tool here\n/);
  assert.match(r.stdout, /== todo tests \(1\)\nouter > not written yet # TODO/);
});

test("with CI=true: an unlisted skip or todo fails the run, naming each", () => {
  const r = runNpmTest(withSkipAndTodo, { CI: "true" });
  assert.equal(r.status, 1, r.stdout.slice(-2000));
  assert.match(r.stdout, /test\/skip-allowlist\.json does not name them:\n {2}outer > left out # SKIP no tool here\n {2}outer > not written yet # TODO/);
});

test("with CI=true and nothing skipped: the run passes", () => {
  const r = runNpmTest(`import { test } from "node:test";\ntest("runs", () => {});\n`, { CI: "true" });
  assert.equal(r.status, 0, r.stdout.slice(-2000));
  assert.doesNotMatch(r.stdout, /== skipped tests/);
});

test("a failure is listed in the summary with its suite, and fails the run", () => {
  const r = runNpmTest(
    `import { describe, test } from "node:test";\nimport assert from "node:assert/strict";\ndescribe("s", () => { test("breaks", () => assert.equal(1, 2)); });\n`,
    { CI: undefined },
  );
  assert.equal(r.status, 1);
  assert.match(r.stdout, /== failing tests \(1\)\nnot ok: s > breaks\n/);
});

test("every result reaches the summary: twelve files of fifty quick tests, four at a time, report 600 of 600", () => {
  // Without scripts/flush-before-exit.ts, node's forced exit of each file's process lost the last
  // results of some (470 to 568 of 600 reported, exit 0: nodejs/node#64833).
  const files: Record<string, string> = {};
  for (let f = 0; f < 12; f++) {
    const tests = Array.from({ length: 50 }, (_, t) => `test("file ${f} test ${t}, a name of some length", () => {});`);
    files[`quick-${f}.test.ts`] = `import { test } from "node:test";\n${tests.join("\n")}\n`;
  }
  const r = runNpmTest(files, { CI: "true" });
  assert.equal(r.status, 0, r.stdout.slice(-2000));
  assert.match(r.stdout, /^# tests 600$/m, r.stdout.slice(-1500));
  assert.match(r.stdout, /^# pass 600$/m);
});

const passingSpec = `import { test } from "node:test";\ntest("holds", () => {});\n`;

test("specs share a process: a failing one fails the run and the summary names its file, suite and test", () => {
  const r = runNpmTest(
    {
      "a.spec.ts": passingSpec,
      "b.spec.ts": `import { describe, test } from "node:test";\nimport assert from "node:assert/strict";\ndescribe("s", () => { test("breaks", () => assert.equal(1, 2)); });\n`,
      "c.spec.ts": passingSpec,
    },
    { CI: undefined },
  );
  assert.equal(r.status, 1, r.stdout.slice(-2000));
  assert.match(r.stdout, /3 specs of them in 2 shared processes/);
  // The test by its suite (under its spec's path when the TAP nests it so), the file in its location line.
  assert.match(r.stdout, /== failing tests \(1\)\nnot ok: (\S*b\.spec\.ts > )?s > breaks\n(.*\n){0,6}.*location: '\S*runner-test-\w+\/b\.spec\.ts:/);
});

test("a spec whose top-level hook fails fails the run; the other specs of its process still run", () => {
  const r = runNpmTest(
    {
      "a.spec.ts": `import { before, test } from "node:test";\nbefore(() => { throw new Error("no database"); });\ntest("needs it", () => {});\n`,
      "b.spec.ts": `import { beforeEach, test } from "node:test";\nlet n = 0;\nbeforeEach(() => { n++; });\ntest("its own hook only", () => { if (n !== 1) throw new Error(String(n)); });\n`,
    },
    { CI: undefined, TEST_CONCURRENCY: "1" },
  );
  assert.equal(r.status, 1, r.stdout.slice(-2000));
  assert.match(r.stdout, /not ok: (\S*a\.spec\.ts > )?needs it\n/);
  assert.match(r.stdout, /ok \d+ - its own hook only/);
});

test("a spec that leaves a timer and a server open does not hold the run: its process ends once its tests are done", () => {
  const leaking = `import { createServer } from "node:http";\nimport { test } from "node:test";\nsetInterval(() => {}, 1000);\ntest("leaves things open", async () => { await new Promise((r) => createServer().listen(0, () => r(undefined))); });\n`;
  const r = runNpmTest({ "leaky.spec.ts": leaking, "next.spec.ts": passingSpec, "own.test.ts": leaking }, { CI: undefined });
  assert.equal(r.status, 0, r.stdout.slice(-2000));
  assert.match(r.stdout, /# pass 3\n/);
});

test("the shared processes get about equal weights, each heaviest first", () => {
  const weights: Record<string, number> = { a: 5, b: 4, c: 3, d: 3, e: 1 };
  assert.deepEqual(
    partition(Object.keys(weights), (f) => weights[f] ?? 0, 2),
    [
      ["a", "d"],
      ["b", "c", "e"],
    ],
  );
  assert.deepEqual(
    partition(["a"], () => 1, 2),
    [["a"]],
  );
});

test("a spec that turns on tracing for its process keeps a process of its own", () => {
  // A tracer provider cannot be taken back: a spec sharing the process with the one that installs it
  // sees spans exported for every request (tracing-off.spec.ts failed so once the partition put it
  // after tracing.spec.ts). Which spec lands in which shared process changes with every spec's size.
  const specs = spawnSync("git", ["ls-files", "*.spec.ts"], { encoding: "utf8" }).stdout.trim().split("\n");
  const installing = specs.filter((f) => /registerTracerProvider\(|setGlobalTracerProvider\(|\.register\(\)/.test(readFileSync(f, "utf8")));
  assert.ok(installing.length > 0, "no spec installs a tracer provider: this check has nothing to look at");
  assert.deepEqual(
    installing.filter((f) => !ownProcessMarker.test(readFileSync(f, "utf8"))),
    [],
  );
});

test("the allowlist lets a named skip pass, and every entry must give a reason", () => {
  const summary = summarizeTap("# Subtest: a\n    # Subtest: b\n    ok 1 - b # SKIP why\n    1..1\nok 1 - a\n");
  assert.deepEqual(summary.skipped, ["a > b # SKIP why"]);
  assert.deepEqual(unlistedSkips(summary, [{ test: "a > b", reason: "tool not packaged for Debian" }]), []);
  assert.deepEqual(unlistedSkips(summary, []), ["a > b # SKIP why"]);
  const dir = mkdtempSync(join(tmpdir(), "allowlist-"));
  try {
    const path = join(dir, "allow.json");
    writeFileSync(path, JSON.stringify({ skips: [{ test: "a > b", reason: " " }] }));
    assert.throws(() => readSkipAllowlist(path), /skips\[0\] needs a "test" and a non-empty "reason"/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the repository's allowlist is empty: .ci/run installs what every test needs", () => {
  assert.deepEqual(readSkipAllowlist("test/skip-allowlist.json"), []);
  assert.ok(JSON.parse(readFileSync("test/skip-allowlist.json", "utf8")).about);
});

/** A sample file that records the cores it may run on and, for the one-core pair, waits to meet its partner. */
const laneProbe = (me: string, marker: string, partner?: string) => `${marker}
import { test } from "node:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
const dir = process.env["LANES_PROBE_DIR"];
const seen = (n) => existsSync(join(dir, n + ".started"));
test("probe ${me}", async () => {
  const cores = /^Cpus_allowed_list:\\s*(\\S+)$/m.exec(readFileSync("/proc/self/status", "utf8"))[1];
  const before = ["A", "B", "C"].filter(seen);
  writeFileSync(join(dir, "${me}.started"), "");
  let met = false;
  ${partner ? `for (let i = 0; i < 600 && !(met = seen("${partner}")); i++) await sleep(50);` : ""}
  writeFileSync(join(dir, "${me}.json"), JSON.stringify({ cores, before, met }));
});
`;

test("files marked 'alone on one core' run two at a time after the others, each pinned to its own half of the cores; plain 'alone' files after them, unpinned", () => {
  const probes = mkdtempSync(join(tmpdir(), "lanes-probe-"));
  try {
    const r = runNpmTest(
      {
        "a.test.ts": laneProbe("A", "// npm test: alone on one core (sample)", "B"),
        "b.test.ts": laneProbe("B", "// npm test: alone on one core (sample)", "A"),
        "c.test.ts": laneProbe("C", "// npm test: alone (sample)"),
        "r.test.ts": laneProbe("R", ""),
      },
      { CI: undefined, LANES_PROBE_DIR: probes },
    );
    assert.equal(r.status, 0, r.stdout.slice(-2000));
    const probe = (n: string) => JSON.parse(readFileSync(join(probes, `${n}.json`), "utf8")) as { cores: string; before: string[]; met: boolean };
    const [a, b, c, rr] = ["A", "B", "C", "R"].map(probe) as [
      ReturnType<typeof probe>,
      ReturnType<typeof probe>,
      ReturnType<typeof probe>,
      ReturnType<typeof probe>,
    ];
    const all = /^Cpus_allowed_list:\s*(\S+)$/m.exec(readFileSync("/proc/self/status", "utf8"))![1];
    assert.deepEqual(rr.before, [], "the parallel phase's file ran before every alone file");
    const halves = coreHalves();
    if (halves) {
      assert.ok(a.met && b.met, "the two one-core files ran at the same time");
      assert.deepEqual([a.cores, b.cores].sort(), [...halves].sort(), "each on its own half of the cores");
    } else {
      assert.deepEqual([a.cores, b.cores], [all, all], "no halves on this machine: every core, one at a time");
    }
    assert.deepEqual(c.before.sort(), ["A", "B"], "the plain alone file ran after the one-core pair");
    assert.equal(c.cores, all, "and on every core");
  } finally {
    rmSync(probes, { recursive: true, force: true });
  }
});

test("test files make their temporary files in the run's folder (TEST_TMPDIR here), and port reservations stay in the system's temporary folder", () => {
  const system = mkdtempSync(join(tmpdir(), "runner-system-tmp-"));
  try {
    const chosen = join(system, "chosen");
    const r = runNpmTest(
      `import { test } from "node:test";
import assert from "node:assert/strict";
import { tmpdir } from "node:os";
test("sees the run's folders", () => {
  assert.equal(tmpdir(), ${JSON.stringify(chosen)});
  assert.equal(process.env["PLATFORM_PORT_RESERVATIONS"], ${JSON.stringify(join(system, "platform-free-ports"))});
});
`,
      { CI: "true", TMPDIR: system, TEST_TMPDIR: chosen, PLATFORM_PORT_RESERVATIONS: undefined },
    );
    assert.equal(r.status, 0, r.stdout.slice(-2000));
    assert.match(r.stdout, new RegExp(`^npm test: temporary files in ${chosen.replaceAll("/", "\\/")} \\(TEST_TMPDIR\\)$`, "m"));
  } finally {
    rmSync(system, { recursive: true, force: true });
  }
});
