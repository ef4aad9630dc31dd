import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { once } from "node:events";
import { after, describe, it } from "node:test";
import { coreHalves, pinProcessTrees } from "./cpu-affinity.js";

/** The cores each thread of `pid` may run on (/proc, "0", "0-1"). */
const allowed = (pid: number) =>
  readdirSync(`/proc/${pid}/task`).map((tid) => /^Cpus_allowed_list:\s*(\S+)$/m.exec(readFileSync(`/proc/${pid}/task/${tid}/status`, "utf8"))![1]);

/**
 * A node process with a thread pool and a child of its own; it forks one
 * more child when told to ("fork\n" on stdin) and prints each child's pid.
 */
function tree(): { proc: ChildProcess; pids: AsyncIterator<number> } {
  const script = `
    const { spawn } = require("node:child_process");
    const child = () => console.log(spawn("sleep", ["30"], { stdio: "ignore" }).pid);
    require("node:crypto").pbkdf2Sync("x", "y", 1, 8, "sha256");
    child();
    process.stdin.on("data", () => child());
  `;
  const proc = spawn(process.execPath, ["-e", script], { stdio: ["pipe", "pipe", "inherit"] });
  async function* lines() {
    for await (const chunk of proc.stdout!) for (const l of String(chunk).trim().split("\n")) yield Number(l);
  }
  return { proc, pids: lines() };
}

describe("pinProcessTrees", () => {
  const started: ChildProcess[] = [];
  after(() => {
    for (const p of started) p.kill("SIGKILL");
  });

  it("pins every thread of a process and of its children, and children forked later inherit it", async () => {
    const { proc, pids } = tree();
    started.push(proc);
    const first = (await pids.next()).value as number;
    pinProcessTrees([proc.pid!], "0");
    assert.deepEqual([...new Set(allowed(proc.pid!))], ["0"], "every thread of the root");
    assert.deepEqual(allowed(first), ["0"], "the child that was already there");
    proc.stdin!.write("fork\n");
    const later = (await pids.next()).value as number;
    assert.deepEqual(allowed(later), ["0"], "a child forked after the pin");
    pinProcessTrees([proc.pid!], coreHalves()?.[1] ?? "0");
    assert.deepEqual(allowed(later), [coreHalves()?.[1] ?? "0"], "pinned again, elsewhere");
  });

  it("names the pid and the cores when the kernel refuses", async () => {
    const { proc, pids } = tree();
    started.push(proc);
    await pids.next();
    assert.throws(() => pinProcessTrees([proc.pid!], "4095"), new RegExp(`pid ${proc.pid} to cpus 4095`));
    proc.kill("SIGKILL");
    await once(proc, "exit");
    assert.doesNotThrow(() => pinProcessTrees([proc.pid!], "0"), "a process that has exited is skipped");
  });
});

describe("coreHalves", () => {
  it("splits the cores into two disjoint halves, the odd one left out", () => {
    assert.deepEqual(coreHalves(2), ["0", "1"]);
    assert.deepEqual(coreHalves(8), ["0-3", "4-7"]);
    assert.deepEqual(coreHalves(3), ["0", "1"]);
    assert.equal(coreHalves(1), undefined);
  });
});
