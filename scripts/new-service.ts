/**
 * `npm run new-service -- <name> [--db] [--public]`: adds a service the way
 * ours are made (docs/adding-a-service.md describes every step by hand):
 *
 *   proto/<name>/v1/<name>.proto        a small example API, buf lint clean
 *   packages/proto/src/gen, index.ts     regenerated, namespace exported
 *   services/<name>/                     package.json, src/{main,config,routes,<name>-service}.ts,
 *                                        a unit test, and with --db migrations/ and its own schema
 *   test/e2e/<name>.test.ts              starts the platform with it and calls it over gRPC
 *   docker-compose.yml                   internal service with healthcheck (and its database role)
 *   deploy/k8s/base                      Deployment, Service, PDB, HPA, NetworkPolicy
 *   observability/prometheus.yml         scrapes its admin port
 *   package-lock.json                    the new workspace
 *
 * With --public the gateway publishes its API too: a line in
 * services/gateway/src/forwarded-apis.ts, the gateway's <NAME>_URL in
 * docker-compose.yml and deploy/k8s/base/gateway.yaml, and the gateway as
 * its one caller in the NetworkPolicy and the manifest test's call graph.
 *
 * It takes the next free port pair (8084/9084, 8085/9085, ...). Everything
 * is checked before anything is written: a bad or taken name, or a file it
 * does not recognise, is refused with a message and changes nothing; if a
 * tool fails afterwards, every change is rolled back.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import * as edit from "./new-service/edits.js";
import { AnchorError } from "./new-service/edits.js";
import { deriveNames, nameProblems } from "./new-service/names.js";
import * as template from "./new-service/templates.js";
import type { ServiceSpec } from "./new-service/templates.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const usage = `usage: npm run new-service -- <name> [--db] [--public]

  <name>    lowercase letters, digits and single dashes, starting with a letter
  --db      the service gets its own PostgreSQL schema, role, pool and migrations
  --public  the gateway publishes its API (Connect, gRPC, gRPC-Web on :8080),
            with the edge's deadline, retries, auth and rate limit`;

class Refusal extends Error {}

function fail(message: string, status: number): never {
  process.stderr.write(`new-service: ${message}\n`);
  process.exit(status);
}

function parseArgs(argv: string[]): { name: string; database: boolean; public: boolean } {
  const positional = argv.filter((a) => !a.startsWith("-"));
  const flags = argv.filter((a) => a.startsWith("-"));
  if (flags.includes("--help") || flags.includes("-h")) {
    process.stdout.write(`${usage}\n`);
    process.exit(0);
  }
  const unknown = flags.filter((f) => f !== "--db" && f !== "--public");
  if (unknown.length > 0) throw new Refusal(`unknown option ${unknown.join(", ")}\n${usage}`);
  if (positional.length !== 1) throw new Refusal(`expected exactly one service name, got ${positional.length}\n${usage}`);
  return { name: positional[0]!, database: flags.includes("--db"), public: flags.includes("--public") };
}

const read = (path: string) => readFileSync(join(root, path), "utf8");
/** A file that lists services, or "" when it is gone (nothing to collide with there). */
const readIf = (path: string) => (existsSync(join(root, path)) ? read(path) : "");

/** Env names some config already reads: a new dependency's `<PREFIX>_*` must not collide with them. */
function knownEnvNames(): Set<string> {
  const files = [
    ...readdirSync(join(root, "packages/runtime/src")).filter((f) => f.endsWith(".ts")).map((f) => `packages/runtime/src/${f}`),
    ...readdirSync(join(root, "services")).map((d) => `services/${d}/src/config.ts`),
  ].filter((f) => existsSync(join(root, f)));
  return new Set(files.flatMap((f) => [...read(f).matchAll(/"([A-Z][A-Z0-9_]*)"/g)].map((m) => m[1]!)));
}

/** Why `name` cannot be added (empty when it can). */
function takenProblems(s: ServiceSpec): string[] {
  const out: string[] = [];
  const paths = [`services/${s.name}`, `proto/${s.snake}`, `packages/proto/src/gen/${s.snake}`, `test/e2e/${s.name}.test.ts`, `deploy/k8s/base/${s.name}.yaml`];
  for (const p of paths) if (existsSync(join(root, p))) out.push(`${p} already exists`);
  if (new RegExp(`^ {2}${s.name}:$`, "m").test(readIf("docker-compose.yml"))) out.push(`docker-compose.yml already has a service "${s.name}"`);
  if (new RegExp(`^ {2}name: ${s.name}-ingress$`, "m").test(readIf("deploy/k8s/base/network-policies.yaml"))) out.push(`deploy/k8s/base/network-policies.yaml already has ${s.name}-ingress`);
  if (new RegExp(`\\b${s.namespace}\\b`).test(readIf("packages/proto/src/index.ts"))) out.push(`packages/proto/src/index.ts already exports ${s.namespace}`);
  if (new RegExp(`"${s.name}"`).test(/serviceNames = \[[^\]]*\]/.exec(readIf("packages/launcher/src/start-platform.ts"))?.[0] ?? "")) out.push(`"${s.name}" is one of the launcher's services`);
  const env = knownEnvNames();
  const own = [`${s.envPrefix}_URL`, `${s.envPrefix}_MAX_CONCURRENT`, `${s.envPrefix}_MAX_QUEUE`, ...(s.database ? [`${s.envPrefix}_DB_PASSWORD`] : [])];
  const clash = own.filter((v) => env.has(v));
  if (clash.length > 0) out.push(`its settings would collide with variables already read: ${clash.join(", ")}`);
  if (readIf("docker-compose.yml").includes(`${s.envPrefix}_DB_PASSWORD`)) out.push(`docker-compose.yml already uses ${s.envPrefix}_DB_PASSWORD`);
  return out;
}

/** The smallest k >= 1 such that 8080+k and 9080+k are used nowhere (configs, compose, manifests). */
function nextPortPair(): { port: number; adminPort: number } {
  const used = new Set<number>([3000, 9090]); // Grafana and Prometheus (observability profile)
  const sources = [
    ...readdirSync(join(root, "services")).map((d) => `services/${d}/src/config.ts`),
    "docker-compose.yml",
    "packages/launcher/src/start-platform.ts",
    ...readdirSync(join(root, "deploy/k8s/base")).map((f) => `deploy/k8s/base/${f}`),
  ].filter((f) => existsSync(join(root, f)));
  for (const f of sources) {
    for (const m of read(f).matchAll(/(?:port|adminPort|PORT|ADMIN_PORT|containerPort|port:)\W{1,3}(\d{4,5})\b/g)) used.add(Number(m[1]));
  }
  for (let k = 1; k < 900; k++) {
    if (!used.has(8080 + k) && !used.has(9080 + k)) return { port: 8080 + k, adminPort: 9080 + k };
  }
  throw new Refusal("no free port pair between 8081/9081 and 8979/9979");
}

interface Plan {
  /** New files, relative path -> text. */
  create: Map<string, string>;
  /** Existing files, relative path -> new text. */
  change: Map<string, string>;
}

function plan(s: ServiceSpec): Plan {
  const create = new Map<string, string>([
    [`proto/${s.snake}/v1/${s.snake}.proto`, template.protoFile(s)],
    [`services/${s.name}/package.json`, template.packageJson(s)],
    [`services/${s.name}/src/main.ts`, template.mainTs(s)],
    [`services/${s.name}/src/config.ts`, template.configTs(s)],
    [`services/${s.name}/src/routes.ts`, template.routesTs(s)],
    [`services/${s.name}/src/${s.name}-service.ts`, template.serviceTs(s)],
    [`services/${s.name}/src/${s.name}-service.spec.ts`, template.serviceSpecTs(s)],
    [`test/e2e/${s.name}.test.ts`, template.e2eTestTs(s)],
    [`deploy/k8s/base/${s.name}.yaml`, template.k8sManifest(s)],
  ]);
  if (s.database) create.set(`services/${s.name}/migrations/001_create_items.sql`, template.migrationSql(s));

  const edits: [string, (text: string, s: ServiceSpec) => string][] = [
    ["packages/proto/src/index.ts", edit.protoIndex],
    ["deploy/k8s/base/kustomization.yaml", edit.kustomization],
    ["deploy/k8s/base/network-policies.yaml", edit.networkPolicies],
    ["test/kubernetes-manifests.test.ts", edit.manifestTest],
    ["docker-compose.yml", edit.compose],
    ["observability/prometheus.yml", edit.prometheus],
  ];
  if (s.public) edits.push(["services/gateway/src/forwarded-apis.ts", edit.forwardedApis], ["deploy/k8s/base/gateway.yaml", edit.k8sGateway]);
  if (s.database) {
    edits.push(["deploy/compose/postgres-init.sh", edit.postgresInit], ["deploy/compose/example.env", edit.exampleEnv], ["test/repository.test.ts", edit.repositoryTest]);
  }
  const change = new Map<string, string>();
  const problems: string[] = [];
  for (const [path, fn] of edits) {
    if (!existsSync(join(root, path))) {
      problems.push(`${path} is missing`);
      continue;
    }
    try {
      change.set(path, fn(read(path), s));
    } catch (e) {
      if (e instanceof AnchorError) problems.push(e.message);
      else throw e;
    }
  }
  if (problems.length > 0) {
    throw new Refusal(`cannot add "${s.name}": these files are not shaped as expected:\n  - ${problems.join("\n  - ")}\nNothing was changed. Add the service by hand (docs/adding-a-service.md) or fix the generator.`);
  }
  return { create, change };
}

/** Every file under `dir` (relative to root) with its content, to restore it exactly. */
function snapshot(dir: string): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  const abs = join(root, dir);
  if (!existsSync(abs)) return out;
  for (const e of readdirSync(abs, { recursive: true, withFileTypes: true })) {
    if (e.isFile()) out.set(relative(root, join(e.parentPath, e.name)), readFileSync(join(e.parentPath, e.name)));
  }
  return out;
}

function run(title: string, cmd: string, args: string[]): void {
  const r = spawnSync(cmd, args, { cwd: root, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`${title} failed (exit ${r.status ?? r.signal}):\n${r.stdout}${r.stderr}`);
}

function main(): void {
  let spec: ServiceSpec;
  let todo: Plan;
  try {
    const args = parseArgs(process.argv.slice(2));
    const shape = nameProblems(args.name);
    if (shape.length > 0) throw new Refusal(`refused: ${shape.join("; ")}. Nothing was changed.`);
    const names = deriveNames(args.name);
    const taken = takenProblems({ ...names, database: args.database, public: args.public, port: 0, adminPort: 0 });
    if (taken.length > 0) throw new Refusal(`refused: "${args.name}" is taken:\n  - ${taken.join("\n  - ")}\nNothing was changed. Pick another name.`);
    spec = { ...names, database: args.database, public: args.public, ...nextPortPair() };
    todo = plan(spec);
  } catch (e) {
    if (e instanceof Refusal) fail(e.message, 2);
    throw e;
  }

  const originals = new Map<string, string>();
  const gen = snapshot("packages/proto/src/gen");
  const rollback = () => {
    for (const path of todo.create.keys()) rmSync(join(root, path), { force: true });
    for (const dir of [`services/${spec.name}`, `proto/${spec.snake}`]) rmSync(join(root, dir), { recursive: true, force: true });
    for (const [path, text] of originals) writeFileSync(join(root, path), text);
    rmSync(join(root, "packages/proto/src/gen"), { recursive: true, force: true });
    for (const [path, bytes] of gen) {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      writeFileSync(join(root, path), bytes);
    }
  };

  try {
    for (const path of todo.change.keys()) originals.set(path, read(path));
    originals.set("package-lock.json", read("package-lock.json"));
    for (const [path, text] of todo.create) {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      writeFileSync(join(root, path), text, { flag: "wx" });
    }
    for (const [path, text] of todo.change) writeFileSync(join(root, path), text);
    run("buf lint", "npx", ["buf", "lint"]);
    run("buf format", "npx", ["buf", "format", "--diff", "--exit-code"]);
    run("buf generate", "npx", ["buf", "generate"]);
    // The lock file lists every workspace; `npm ci` (CI, the image) refuses a stale one.
    run("npm install --package-lock-only", "npm", ["install", "--package-lock-only", "--offline", "--ignore-scripts", "--no-audit", "--no-fund"]);
  } catch (e) {
    rollback();
    fail(`${e instanceof Error ? e.message : String(e)}\nEvery change was rolled back.`, 1);
  }

  const say = (line = "") => process.stdout.write(`${line}\n`);
  say(`new-service: added "${spec.name}" (${spec.database ? `with its own schema ${spec.snake}` : "without a database"}${spec.public ? ", published by the gateway" : ""}) on ports ${spec.port} (rpc) / ${spec.adminPort} (admin)`);
  say();
  say("created:");
  for (const path of [...todo.create.keys(), `packages/proto/src/gen/${spec.snake}/v1/${spec.snake}_pb.ts`]) say(`  ${path}`);
  say("changed:");
  for (const path of [...todo.change.keys(), "package-lock.json"]) say(`  ${path}`);
  say();
  say("next:");
  say(`  npm test -- services/${spec.name}/src/${spec.name}-service.spec.ts test/e2e/${spec.name}.test.ts`);
  say(`  npm test                      everything, including the manifest and compose checks`);
  say(`  replace the example API in proto/${spec.snake}/v1/${spec.snake}.proto, then npm run generate`);
  if (spec.database) {
    say(`  compose: set ${spec.envPrefix}_DB_PASSWORD in .env (deploy/compose/example.env); an existing`);
    say(`           database volume needs the role by hand (docs/adding-a-service.md)`);
    say(`  kubernetes: add the key ${spec.name}-url to the platform-database Secret (docs/kubernetes.md)`);
  }
  say(`  npm start                     starts it with the platform (services/${spec.name}/package.json "platform")`);
  if (spec.public) {
    say(`  curl -s -X POST -H 'content-type: application/json' -d '{"id":"example"}' \\`);
    say(`       http://127.0.0.1:8080/${spec.protoPackage}.${spec.pascal}Service/GetItem`);
  } else say(`  let a service call it: docs/adding-a-service.md, "Calling the new service"`);
}

main();
