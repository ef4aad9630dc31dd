/**
 * Loaded into each process of the files that run alone on one core
 * (scripts/run-test-files.ts passes it to node's runner as `--import`,
 * with TEST_CORE_LANES set): the process takes a free lane, a half of the
 * machine's cores, and pins itself there (every thread; what it starts,
 * a platform's services and its PostgreSQL, inherits the pin), so that two
 * such files measure at the same time without sharing a core.
 *
 * TEST_CORE_LANES is `<dir>:<cores>;<cores>` ("/tmp/x:0;1"). A lane is
 * taken by creating `<dir>/<cores>` and given back when the process exits;
 * the runner runs as many files at once as there are lanes, so one is
 * always free, unless a file's process was killed before it could give its
 * lane back: the next file then runs unpinned and says so.
 */
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { pinProcessTrees } from "../packages/test-support/src/cpu-affinity.js";

const spec = process.env["TEST_CORE_LANES"];
// Not for whatever this process starts: its children inherit the pin itself.
delete process.env["TEST_CORE_LANES"];
if (spec !== undefined) {
  const at = spec.lastIndexOf(":");
  const dir = spec.slice(0, at);
  const lanes = spec.slice(at + 1).split(";");
  const taken = lanes.find((cores) => {
    try {
      mkdirSync(join(dir, cores));
      return true;
    } catch {
      return false;
    }
  });
  if (taken === undefined) process.stderr.write(`npm test: no free core lane in ${dir} (${lanes.join(", ")}): this file runs on every core\n`);
  else {
    process.on("exit", () => rmSync(join(dir, taken), { recursive: true, force: true }));
    pinProcessTrees([process.pid], taken);
  }
}
