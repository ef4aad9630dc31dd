/**
 * `npm start` as a user runs it (npm itself: the build first, then the
 * compiled launcher): one command starts PostgreSQL and one process per
 * service manifest (services/<name>/service.json: the four, the examples
 * and whatever `npm run new-service` added), each plain node on its
 * compiled dist/main.js, and prints a ready line; SIGTERM to npm stops all
 * of them with no orphan; a second start reuses the data. Whatever fails,
 * no platform is left running: every start is stopped in an after hook.
 */
// Runs beside other files: the launcher's 60 s readiness bound per service and the two minutes for the
// ready line are guards against hangs, not speed claims. (It ran alone while the other files' platforms
// ran their services under tsx, at twice the CPU per start; a run beside those once missed the bound.)
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { once } from "node:events";
import { createClient } from "@connectrpc/connect";
import { findFreePort } from "@platform/embedded-postgres";
import { checkoutV1 } from "@platform/proto";
import { isRunning, tempDataDir, transportFor } from "@platform/test-support";

interface Started {
  output: () => string;
  exit: Promise<number | null>;
  kill: (signal: NodeJS.Signals) => void;
}

/** Every `npm start` this file began, to stop in the after hook whatever a failed assertion left running. */
const started: { pid: number; exit: Promise<number | null> }[] = [];

after(async () => {
  for (const s of started) {
    if (!isRunning(s.pid)) continue;
    process.kill(-s.pid, "SIGTERM"); // npm, the launcher, the services, PostgreSQL: the whole group
    const stopped = await Promise.race([s.exit.then(() => true), new Promise<false>((r) => setTimeout(() => r(false), 30_000).unref())]);
    if (!stopped && isRunning(s.pid)) process.kill(-s.pid, "SIGKILL");
  }
});

/**
 * Starts `npm start` and waits (at most two minutes) for its ready line.
 * `npmArgs`: more of npm's own options (`--ignore-scripts`: npm start
 * without its prestart, the build).
 */
async function npmStart(env: Record<string, string>, npmArgs: string[] = []): Promise<Started> {
  // Its own process group, so that the after hook can stop everything it started.
  const child = spawn("npm", ["start", ...npmArgs], { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"], detached: true });
  let out = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (out += d.toString()));
  const exit = once(child, "exit").then(([code]) => code as number | null);
  started.push({ pid: child.pid!, exit });
  // Ready when the ready line is printed (checked on each chunk of output, no polling); npm exiting first is a failure.
  await new Promise<void>((resolve, reject) => {
    // A hang guard, not a speed check: npm start that never says ready fails the test instead of stalling the suite.
    setTimeout(() => reject(new Error(`npm start was not ready within two minutes:\n${out}`)), 120_000).unref();
    const check = () => {
      if (/\bready in \d+ ms: gateway listening on http:\/\/127\.0\.0\.1:\d+/.test(out)) resolve();
    };
    child.stdout.on("data", check);
    child.stderr.on("data", check);
    void exit.then(() => reject(new Error(`npm start exited early:\n${out}`)));
  });
  return { output: () => out, exit, kill: (s) => child.kill(s) };
}

/** The services `npm start` must run: one per manifest. */
function manifestNames(): string[] {
  return readdirSync("services")
    .filter((d) => existsSync(join("services", d, "service.json")))
    .map((d) => (JSON.parse(readFileSync(join("services", d, "service.json"), "utf8")) as { name: string }).name)
    .sort();
}

async function eventually(cond: () => boolean, what: string, attempts = 100): Promise<void> {
  for (let i = 0; i < attempts; i++) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`timed out waiting for: ${what}`);
}

test("npm start: ready line, working API, clean SIGTERM, data kept for the next start", async () => {
  const dataDir = tempDataDir();
  const host = "127.0.0.1";
  const env = {
    DATA_DIR: dataDir,
    GATEWAY_PORT: String(await findFreePort(host)),
    EMBEDDED_POSTGRES_PORT: String(await findFreePort(host)),
    FREE_PORTS: "1",
  };
  try {
    const first = await npmStart(env);
    const gatewayUrl = /gateway listening on (http:\/\/\S+)/.exec(first.output())![1]!;
    const client = createClient(checkoutV1.CheckoutService, transportFor(gatewayUrl, "connect-json"));
    const { order } = await client.placeOrder({ customerId: "npm-start", items: [{ sku: "MUG-CERAMIC", quantity: 1 }] });
    assert.ok(order?.id);

    const postgresPid = Number(readFileSync(join(dataDir, "postgres", "postmaster.pid"), "utf8").split("\n")[0]);
    const ready = [...first.output().matchAll(/^\[platform\] (\S+) +ready on \S+ \(pid (\d+)/gm)].map((m) => ({ name: m[1]!, pid: Number(m[2]) }));
    assert.deepEqual(ready.map((r) => r.name).sort(), manifestNames(), `one process per service.json:\n${first.output()}`);
    const servicePids = ready.map((r) => r.pid);
    assert.ok(isRunning(postgresPid));
    assert.match(first.output(), /^\[build\] \d+ workspaces, \d+ files to dist\//m, "npm start builds first");
    if (existsSync("/proc/self/cmdline")) {
      for (const { name, pid } of ready) {
        const args = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
        assert.match(
          args.slice(1).join(" "),
          new RegExp(`^\\S+/services/${name}/dist/main\\.js$`),
          `${name} (${pid}) runs compiled JavaScript on plain node: ${args.join(" ")}`,
        );
      }
    }

    first.kill("SIGTERM");
    assert.equal(await first.exit, 0, first.output());
    await eventually(() => !isRunning(postgresPid) && servicePids.every((pid) => !isRunning(pid)), "postgres and every service gone");

    // The build was checked on the first start and nothing changed since: the second start, about the data, skips
    // npm's prestart (npm start still runs its own script; the build is two seconds of a core).
    const second = await npmStart(env, ["--ignore-scripts"]);
    assert.doesNotMatch(second.output(), /^\[build\]/m, "the second start ran the launcher only");
    const url2 = /gateway listening on (http:\/\/\S+)/.exec(second.output())![1]!;
    const again = await createClient(checkoutV1.CheckoutService, transportFor(url2, "grpc")).getOrder({ orderId: order.id });
    assert.equal(again.order?.id, order.id, "the order placed in the first run is still there");
    second.kill("SIGINT");
    assert.equal(await second.exit, 0, second.output());
  } finally {
    if (!process.env["KEEP_TEST_DATA"]) rmSync(dataDir, { recursive: true, force: true });
  }
});
