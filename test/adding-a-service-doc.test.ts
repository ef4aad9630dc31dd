/**
 * docs/adding-a-service.md's walk-through, run as written on a copy of the
 * repository: its `npm run new-service` and `npm run generate:services`
 * commands, and the dependency it tells the reader to add to a caller's
 * manifest. The files each step changes must be the files the page says it
 * writes, and the caller must get the address and network path the page
 * promises. (What the new service then passes, its own tests, `npm start`
 * and calls through the gateway, test/new-service.test.ts checks.)
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { parse } from "yaml";
import { copyRepository } from "./repository-copy.js";

const origin = process.cwd();
const page = readFileSync(join(origin, "docs/adding-a-service.md"), "utf8");
const walkThrough = /^## Walk-through\n([\s\S]*?)(?=^## )/m.exec(page)?.[1] ?? "";

/** The walk-through's fenced blocks of one language, in order. */
const blocks = (lang: string) => [...walkThrough.matchAll(new RegExp(`^\`\`\`${lang}\\n([\\s\\S]*?)^\`\`\`$`, "gm"))].map((m) => m[1]!);
/** The commands of the sh blocks that change the repository (the others run services and tests). */
const commands = blocks("sh")
  .flatMap((b) => b.split("\n"))
  .map((l) => l.replace(/\s+#.*$/, "").trim())
  .filter((l) => /^npm run (new-service|generate:services)\b/.test(l));
const generateCommand = commands.find((c) => c.startsWith("npm run new-service"));
const name = /^npm run new-service -- ([a-z][a-z0-9-]*)/.exec(generateCommand ?? "")?.[1] ?? "";

let copy: string;
before(() => {
  copy = copyRepository(origin, "adding-a-service-");
});
after(() => {
  if (copy && !process.env["KEEP_TEST_DATA"]) rmSync(copy, { recursive: true, force: true });
});

function run(command: string): string {
  const env = { ...process.env };
  delete env["NODE_TEST_CONTEXT"];
  // A bound for a hung tool, not a speed check.
  const r = spawnSync("sh", ["-c", command], { cwd: copy, env, encoding: "utf8", timeout: 300_000 });
  assert.equal(r.status, 0, `${command}: exit ${r.status ?? r.signal}\n${r.stdout}${r.stderr}`);
  return r.stdout;
}

/** Every file of the copy outside node_modules, with a digest of its content. */
function tree(): Map<string, string> {
  const out = new Map<string, string>();
  for (const e of readdirSync(copy, { recursive: true, withFileTypes: true })) {
    if (!e.isFile() || relative(copy, e.parentPath).split("/").includes("node_modules")) continue;
    const f = join(e.parentPath, e.name);
    out.set(relative(copy, f), createHash("sha256").update(readFileSync(f)).digest("hex"));
  }
  return out;
}
const changed = (before: Map<string, string>, after: Map<string, string>) =>
  [...new Set([...before.keys(), ...after.keys()])].filter((f) => before.get(f) !== after.get(f)).sort();

/** Files under none of PATHS ("dir/" covers a folder), and PATHS no file is under. */
function against(files: string[], paths: string[]) {
  const covers = (p: string, f: string) => (p.endsWith("/") ? f.startsWith(p) : f === p);
  return { unlisted: files.filter((f) => !paths.some((p) => covers(p, f))), untouched: paths.filter((p) => !files.some((f) => covers(p, f))) };
}

test("the walk-through's commands: the generator writes what the table lists, and a caller's dependency gets its address and network path", () => {
  assert.ok(generateCommand && name, `the walk-through runs npm run new-service: ${commands.join("; ")}`);
  assert.ok(commands.includes("npm run generate:services"), "step 4 regenerates");
  const table = [...walkThrough.matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1]!);
  assert.ok(table.length > 0, "step 1 lists what the generator writes");

  // Step 1: the generator.
  const start = tree();
  const printed = run(generateCommand);
  const ports = /here (\d+)\/(\d+)/.exec(walkThrough);
  assert.ok(ports, "the page names the ports the generator picks");
  assert.match(printed, new RegExp(`on ports ${ports[1]} \\(rpc\\) / ${ports[2]} \\(admin\\)`), "the ports the page names");
  const afterGenerator = tree();
  assert.deepEqual(against(changed(start, afterGenerator), table), { unlisted: [], untouched: [] }, "step 1's table is what the generator changes");

  // Step 4: the dependency, added to the manifest the page names, then the regeneration.
  const caller = /to `dependencies` in `(services\/([a-z0-9-]+)\/service\.json)`/.exec(walkThrough);
  assert.ok(caller, "step 4 names the caller's manifest");
  const [dependency] = blocks("json").map((b) => JSON.parse(b) as { service: string });
  assert.equal(dependency?.service, name, "step 4's dependency is the new service");
  const manifestPath = join(copy, caller[1]!);
  const manifest = JSON.parse(readFileSync(manifestPath, "utf8")) as { dependencies: unknown[] };
  manifest.dependencies.push(dependency);
  writeFileSync(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);
  const beforeRegeneration = tree();
  run("npm run --silent generate:services");
  const regenerated = changed(beforeRegeneration, tree());
  const callerName = caller[2]!;
  const named = [...(/This writes ([\s\S]*?)\n\n/.exec(walkThrough)?.[1] ?? "").matchAll(/`([^`\s]+\.ya?ml)`/g)].map((m) => m[1]!);
  assert.ok(named.length > 0, "step 4 names the files it rewrites");
  assert.deepEqual(
    named.filter((f) => !regenerated.includes(f)),
    [],
    `the files step 4 names are rewritten (rewritten: ${regenerated.join(", ")})`,
  );

  const env = `${name.replaceAll("-", "_").toUpperCase()}_URL`;
  const url = `http://${name}:${ports[1]}`;
  const compose = parse(readFileSync(join(copy, "docker-compose.yml"), "utf8"), { merge: true }) as {
    services: Record<string, { environment?: Record<string, string>; depends_on?: Record<string, unknown> }>;
  };
  assert.equal(compose.services[callerName]?.environment?.[env], url, `compose gives ${callerName} ${env}`);
  assert.ok(compose.services[callerName]?.depends_on?.[name], `compose starts ${callerName} after ${name}`);
  // On Kubernetes the address is the service's headless Service: every pod's address, balanced per call (docs/scaling.md).
  const k8sUrl = `http://${name}-headless:${ports[1]}`;
  assert.match(
    readFileSync(join(copy, `deploy/k8s/base/${callerName}.yaml`), "utf8"),
    new RegExp(`- name: ${env}\\n\\s+value: ${k8sUrl.replaceAll("/", "\\/")}\\n`),
  );
  const policies = readFileSync(join(copy, "deploy/k8s/base/network-policies.yaml"), "utf8")
    .split(/^---$/m)
    .map(
      (d) => parse(d) as { metadata?: { name: string }; spec?: { ingress: { from?: { podSelector: { matchLabels: Record<string, string> } }[] }[] } } | null,
    );
  const ingress = policies.find((p) => p?.metadata?.name === `${name}-ingress`);
  const admitted = (ingress?.spec?.ingress ?? []).flatMap((i) => i.from ?? []).map((f) => f.podSelector.matchLabels["app.kubernetes.io/name"]);
  assert.ok(admitted.includes(callerName) && admitted.includes("gateway"), `${name}-ingress admits ${admitted.join(", ")}`);
});
