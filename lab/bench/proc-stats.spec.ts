import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { test } from "node:test";
import { ProcessTreeCpu } from "./proc-stats.js";

/** A child of this process that spends `cpuMs` of its own CPU, says so, then waits for its stdin to close. */
function burner(cpuMs: number) {
  const child = spawn(
    process.execPath,
    [
      "-e",
      `const until = ${cpuMs * 1000}; while (process.cpuUsage().user + process.cpuUsage().system < until) {} process.stdout.write("done"); process.stdin.resume(); process.stdin.on("end", () => process.exit(0));`,
    ],
    { stdio: ["pipe", "pipe", "inherit"] },
  );
  return { child, done: once(child.stdout, "data") };
}

test("a tree's CPU is charged to the group its process was assigned, the rest to no group", async () => {
  const tree = new ProcessTreeCpu(process.pid);
  const busy = burner(300);
  const idle = burner(0);
  try {
    await Promise.all([busy.done, idle.done]);
    tree.assign(new Map([[busy.child.pid!, "busy"]]));
    // A later assignment does not move a process out of the group it was first given.
    tree.assign(new Map([[busy.child.pid!, "other"]]));
    const total = tree.totalMs();
    const busyMs = tree.groupMs("busy");
    assert.ok(busyMs >= 250, `the busy child's group: ${busyMs} ms of the 300 it spent`);
    assert.equal(tree.groupMs("other"), 0);
    // No group: this process itself and the idle child; together with the group, the whole tree.
    assert.equal(tree.groupMs(undefined) + busyMs, total);
  } finally {
    busy.child.stdin!.end();
    idle.child.stdin!.end();
  }
});
