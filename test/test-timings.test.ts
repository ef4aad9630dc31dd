/**
 * scripts/test-timings.ts (TEST_TIMINGS=<file> npm test): a file's CPU is
 * its whole process tree's (Linux, /proc), children and grandchildren included, also
 * those that ended before the last sample, and nothing of another file's; and when each tree was first seen.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { sampleTree } from "../scripts/test-timings.js";

/**
 * A node process that starts a grandchild burning `ms` of CPU, waits for it, and prints the grandchild's own CPU seconds.
 * The grandchild counts its own CPU, not the clock: on a loaded machine 1.2 s of wall time was 0.25 s of CPU, less than
 * the other tree's 0.3 s burn, and the comparison below failed.
 */
function burner(tag: string, ms: number) {
  const grandchild = `const s=process.cpuUsage();for(;;){const b=process.cpuUsage(s);if(b.user+b.system>=${ms}e3)break}const u=process.cpuUsage();console.log((u.user+u.system)/1e6)`;
  const child = `const c=require("node:child_process").spawnSync(process.execPath,["-e",${JSON.stringify(grandchild)}],{encoding:"utf8"});process.stdout.write(c.stdout);setTimeout(()=>{},1500)`;
  return spawn(process.execPath, ["-e", child, tag], { stdio: ["ignore", "pipe", "inherit"] });
}

test("each child's tree is timed apart, a grandchild that ended included", async () => {
  const children = [burner("tree-a", 1200), burner("tree-b", 300)];
  const names = new Map(children.map((c, i) => [c.pid, i === 0 ? "a" : "b"]));
  const sampler = sampleTree((pid) => names.get(pid), "self", process.pid, 100);
  const outputs = children.map(async (c) => {
    let out = "";
    c.stdout.on("data", (d: Buffer) => (out += d.toString()));
    await once(c, "exit");
    return Number(out.trim());
  });
  const [burnedA, burnedB] = await Promise.all(outputs);
  const timings = new Map(sampler.stop().map((t) => [t.file, t.cpuSeconds]));
  const [a, b] = [timings.get("a") ?? 0, timings.get("b") ?? 0];
  // Each tree is its grandchild's burn (ended 1.5 s before its parent) plus two node start-ups; the
  // parent's last 100 ms interval is not counted. At least the grandchild's own CPU, which only the
  // reaped-children counters still hold once it has ended; no more than the other tree's is added.
  assert.ok(burnedA !== undefined && a >= burnedA - 0.05, `tree a: ${a} CPU s counted, its grandchild alone used ${burnedA}`);
  assert.ok(burnedB !== undefined && b >= burnedB - 0.05, `tree b: ${b} CPU s counted, its grandchild alone used ${burnedB}`);
  assert.ok(b < a, `tree b (${b} s) must not include tree a's burn (${a} s)`);
});

test("a tree's start is when it was first seen: one started later starts later in the timings", async () => {
  // Each lives a second: the 50 ms sampling sees it even on a loaded machine.
  const sleeper = () => spawn(process.execPath, ["-e", "setTimeout(()=>{},1000)"], { stdio: "ignore" });
  const first = sleeper();
  const names = new Map<number | undefined, string>([[first.pid, "first"]]);
  const sampler = sampleTree((pid) => names.get(pid), "self", process.pid, 50);
  await once(first, "exit");
  // Started once the first has ended, so first seen by a later sample than the first, whatever the machine's speed.
  const second = sleeper();
  names.set(second.pid, "second");
  await once(second, "exit");
  const starts = new Map(sampler.stop().map((t) => [t.file, t.startSeconds]));
  const [a, b] = [starts.get("first"), starts.get("second")];
  assert.ok(a !== undefined && b !== undefined, `both trees were seen: ${JSON.stringify([...starts])}`);
  assert.ok(a >= 0 && b > a, `first seen at ${a} s, second at ${b} s`);
});
