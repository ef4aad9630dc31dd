/**
 * The naive plug-in as built services load it: plain node (no tsx), from
 * lab/naive/dist/, with @platform/* resolved to the compiled workspaces
 * (`npm run build` first, as for the storm lab's test).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { compiledNaivePlugin } from "./compiled-plugin.js";

test("the compiled naive plug-in loads in plain node and exports the plug-in's own hooks", async () => {
  const path = compiledNaivePlugin();
  const source = await import("./plugin.js");
  const script = `const m = await import(${JSON.stringify(path)}); console.log(JSON.stringify({ hooks: Object.keys(m.plugin).sort(), timeouts: m.naiveCallTimeoutMs }));`;
  // process.execPath without execArgv: no tsx, as a service started from dist/main.js.
  const out = execFileSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8", env: { ...process.env, NODE_OPTIONS: "" } });
  const loaded = JSON.parse(out.trim().split("\n").at(-1)!) as { hooks: string[]; timeouts: Record<string, number> };
  assert.deepEqual(loaded.hooks, Object.keys(source.plugin).sort());
  assert.deepEqual(loaded.timeouts, source.naiveCallTimeoutMs);
});
