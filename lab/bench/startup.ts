/**
 * `npm run bench:startup`: what compiling the services changed at start-up.
 * Each of the four services is started alone, again and again, in three
 * forms, interleaved (round-robin, the order rotated each round) so that
 * the machine's other load falls on all three alike:
 *
 * - `tsx`: node --import tsx services/<name>/src/main.ts, tsx's cache on
 *   and warm (how `npm start` ran before);
 * - `tsx, no cache`: the same with TSX_DISABLE_CACHE=1 (how the image ran
 *   before: read-only root filesystem, every module transpiled at start);
 * - `built`: node services/<name>/dist/main.js (how `npm start` and the image
 *   run now).
 *
 * Measured from spawn to the service's "ready" message (it serves): wall
 * time, CPU time (the process and its children: tsx keeps an esbuild
 * process), and resident memory at that moment (the process alone, and with
 * its children). CPU time is the number to trust on a shared machine; wall
 * time moves with everything else that runs. Prints medians and ratios
 * (built / tsx). Linux only (/proc).
 *
 *   npm run bench:startup                 5 rounds
 *   npm run bench:startup -- --rounds 9
 */
import { fork, spawnSync } from "node:child_process";
import { once } from "node:events";
import { readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { findFreePort, startEmbeddedPostgres } from "@platform/embedded-postgres";
import { ensureServiceRoles, serviceEntry, serviceNames } from "@platform/launcher";
import { effectiveDependencies, envPrefix, readServiceManifests } from "@platform/registry";
import { median, ratio } from "../stats.js";
import { cpuMs, memory, parentPid } from "./proc-stats.js";
import { tempDataDir } from "@platform/test-support";

type Form = "tsx" | "tsx, no cache" | "built";
const forms: Form[] = ["tsx", "tsx, no cache", "built"];

interface Sample {
  wallMs: number;
  cpuMs: number;
  rssMiB: number;
  treeRssMiB: number;
  children: number;
}

function parseRounds(argv: string[]): number {
  const i = argv.indexOf("--rounds");
  if (i === -1) return 5;
  const n = Number(argv[i + 1]);
  if (!Number.isInteger(n) || n < 1 || n > 100) {
    process.stderr.write(`--rounds must be an integer from 1 to 100, got ${argv[i + 1]}\n`);
    process.exit(2);
  }
  return n;
}

function childrenOf(pid: number): number[] {
  return readdirSync("/proc")
    .filter((e) => /^\d+$/.test(e))
    .map(Number)
    .filter((p) => parentPid(p) === pid);
}

async function startOnce(name: string, form: Form, env: Record<string, string>): Promise<Sample> {
  const entry = serviceEntry(name, form === "built" ? "build" : "source");
  const port = await findFreePort("127.0.0.1");
  const adminPort = await findFreePort("127.0.0.1");
  const started = performance.now();
  const child = fork(entry, [], {
    execArgv: form === "built" ? [] : ["--import", "tsx"],
    env: {
      ...process.env,
      ...env,
      HOST: "127.0.0.1",
      PORT: String(port),
      ADMIN_PORT: String(adminPort),
      LOG_LEVEL: "warn",
      ...(form === "tsx, no cache" ? { TSX_DISABLE_CACHE: "1" } : {}),
    },
    stdio: ["ignore", "ignore", "inherit", "ipc"],
  });
  const exited = once(child, "exit");
  await new Promise<void>((resolve, reject) => {
    child.on("message", (m: unknown) => {
      if ((m as { type?: unknown }).type === "ready") resolve();
    });
    void exited.then(([code]) => reject(new Error(`${name} (${form}) exited ${String(code)} before it was ready`)));
  });
  const wallMs = performance.now() - started;
  const pid = child.pid!;
  const kids = childrenOf(pid);
  const rss = memory(pid)?.rssKiB ?? Number.NaN;
  const sample: Sample = {
    wallMs,
    cpuMs: cpuMs(pid) + kids.reduce((s, k) => s + cpuMs(k), 0),
    rssMiB: rss / 1024,
    treeRssMiB: (rss + kids.reduce((s, k) => s + (memory(k)?.rssKiB ?? 0), 0)) / 1024,
    children: kids.length,
  };
  child.kill("SIGTERM");
  await exited;
  return sample;
}

const rounds = parseRounds(process.argv.slice(2));
if (!process.platform.startsWith("linux")) {
  process.stderr.write("bench:startup reads /proc: Linux only\n");
  process.exit(2);
}
const build = spawnSync(process.execPath, ["--import", "tsx", "scripts/build.ts"], { stdio: "inherit" });
if (build.status !== 0) process.exit(1);

const dataDir = tempDataDir();
const postgres = await startEmbeddedPostgres({ dataDir: join(dataDir, "postgres"), port: 0, host: "127.0.0.1" });
try {
  const manifests = readServiceManifests();
  const roles = await ensureServiceRoles(
    postgres.url,
    manifests.flatMap((m) => (m.database ? [m.database] : [])),
  );
  // Dependencies are not called at start; their addresses only need to parse.
  const env: Record<string, Record<string, string>> = Object.fromEntries(
    manifests.map((m) => [
      m.name,
      {
        ...Object.fromEntries(effectiveDependencies(m, manifests).map((d) => [`${envPrefix(d.service)}_URL`, "http://127.0.0.1:9"])),
        ...(m.database ? { DATABASE_URL: roles[m.database.role]! } : {}),
      },
    ]),
  );
  // One unmeasured start per form first: migrations run once, tsx's cache is warm, the files are in the page cache.
  // All of a form's services at once: one may wait at start for what another's migrations create (orders for
  // receipts' enqueue_receipt), which one at a time, in name order, never comes.
  for (const form of forms) await Promise.all(serviceNames.map((name) => startOnce(name, form, env[name]!)));

  const samples = new Map<string, Sample[]>();
  for (let round = 0; round < rounds; round++) {
    const order = forms.map((_, i) => forms[(i + round) % forms.length]!);
    for (const name of serviceNames) {
      for (const form of order) {
        const key = `${name}\0${form}`;
        samples.set(key, [...(samples.get(key) ?? []), await startOnce(name, form, env[name]!)]);
      }
    }
    process.stdout.write(`round ${round + 1}/${rounds} done\n`);
  }

  const med = (name: string, form: Form, field: keyof Sample) => median((samples.get(`${name}\0${form}`) ?? []).map((s) => s[field]));
  const cells = (name: string, field: keyof Sample, digits: number) => forms.map((form) => med(name, form, field).toFixed(digits));
  const ratios = (name: string, field: keyof Sample) =>
    [ratio(med(name, "built", field), med(name, "tsx", field)), ratio(med(name, "built", field), med(name, "tsx, no cache", field))]
      .map((x) => x.toFixed(2))
      .join(" / ");
  const head = `| service | ${forms.join(" | ")} | built/tsx / built/no cache |`;
  const rule = `|---|${forms.map(() => "---|").join("")}---|`;
  const table = (title: string, field: keyof Sample, digits: number, withRatios = true) => [
    `${title}:`,
    "",
    withRatios ? head : head.replace(/ built\/tsx.*\|$/, ""),
    withRatios ? rule : rule.slice(0, -4),
    ...serviceNames.map((name) => `| ${name} | ${cells(name, field, digits).join(" | ")} |${withRatios ? ` ${ratios(name, field)} |` : ""}`),
    "",
  ];
  const lines = [
    `Start-up, spawn to ready, medians of ${rounds} starts per service and form, interleaved (Node ${process.version}, ${process.platform}/${process.arch}).`,
    "",
    ...table("CPU ms to ready (the process and its children)", "cpuMs", 0),
    ...table("wall ms to ready (moves with the machine's other load)", "wallMs", 0),
    ...table("resident MiB at ready (the process)", "rssMiB", 1),
    ...table("resident MiB at ready (with its children)", "treeRssMiB", 1),
    ...table("child processes at ready (tsx's esbuild)", "children", 0, false),
  ];
  process.stdout.write(`\n${lines.join("\n")}\n`);
} finally {
  await postgres.stop("fast");
  rmSync(dataDir, { recursive: true, force: true });
}
