/**
 * A service whose supervisor dies without a word (SIGKILL: the launcher, or
 * a test process that started a platform) must not outlive it: its IPC
 * channel closes, it drains and exits (run-main.ts). Its stdout and stderr
 * were pipes into the supervisor, so whatever it logs on the way out meets
 * a broken pipe; sonic-boom 4.2.1, under pino, then retried the exit's
 * synchronous flush every 100 ms for ever, and the service lived on
 * (patches/README.md, "sonic-boom").
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";
import { findFreePort } from "@platform/embedded-postgres";
import { isRunning, waitUntilGone } from "@platform/test-support";

const dir = mkdtempSync(join(tmpdir(), "supervisor-gone-"));
after(() => rmSync(dir, { recursive: true, force: true }));

test("a service exits when its supervisor is SIGKILLed, though its stdout is then a broken pipe", async () => {
  const fixture = fileURLToPath(new URL("./supervise-and-die.ts", import.meta.url));
  const entry = fileURLToPath(new URL("../../services/example-echo/src/main.ts", import.meta.url));
  const [port, adminPort] = [await findFreePort("127.0.0.1"), await findFreePort("127.0.0.1")];
  const supervisor = spawn(process.execPath, ["--import", "tsx", fixture, entry, join(dir, "echo.log"), String(port), String(adminPort)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  supervisor.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
  const exited = once(supervisor, "exit");
  // The service's pid, once it serves (a bound against a hang, not a speed claim).
  for (let waited = 0; !/^\d+\n/.test(out); waited += 50) {
    assert.ok(waited < 90_000 && supervisor.exitCode === null, `the supervisor printed no pid: ${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const pid = Number(out.trim());
  try {
    assert.ok(isRunning(pid), "the service runs");
    supervisor.kill("SIGKILL");
    await exited;
    // It drains first (in-flight calls, up to its drain timeout: none here).
    assert.ok(await waitUntilGone(pid, 30_000), `service ${pid} outlived its supervisor by 30 s`);
  } finally {
    if (isRunning(pid)) process.kill(pid, "SIGKILL");
  }
});
