/**
 * `npm run new-service -- <name> [--db] [--public]`: adds a service by
 * copying a real one. The examples services/example-echo (no database) and
 * services/example-notes (--db: its own schema, role and migrations) compile,
 * pass their tests and run in `npm start`; the copy is renamed with a token
 * map (token-map.ts) and gets its own manifest, services/<name>/service.json,
 * with the next free ports and, with --public, "public": true.
 *
 *   services/<name>/          the example's folder, renamed
 *   proto/<snake>/v1/         its proto package, renamed; generated code and
 *                             the @platform/proto index by `npm run generate`
 *   test/e2e/<name>.test.ts   its end-to-end test, renamed
 *   package-lock.json         the new workspace (npm install --package-lock-only)
 *
 * No shared file is edited: compose, Kubernetes, prometheus, the database
 * init script, the gateway's forwarded APIs are derived from the manifests
 * (regenerate.ts). A bad or taken name is refused before anything is
 * written; if a tool fails afterwards, every change is rolled back.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { planDatabasePools, postgresServersFile, readPostgresServers, readServiceManifests } from "@platform/registry";
import { exampleFiles, exampleFor, examples } from "./new-service/examples.js";
import { renderManifest } from "./new-service/manifest.js";
import { deriveNames, nameProblems, type ServiceNames } from "./new-service/names.js";
import { manifestPorts, nextPortPair } from "./new-service/ports.js";
import { regenerateServiceArtifacts } from "./new-service/regenerate.js";
import { renamePath, renameText, tokenMap } from "./new-service/token-map.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const usage = `usage: npm run new-service -- <name> [--db] [--public]

  <name>    lowercase letters, digits and single dashes, starting with a letter
  --db      copy services/example-notes: its own PostgreSQL schema, role, pool and migrations
            (without: services/example-echo)
  --public  the gateway publishes its API (Connect, gRPC, gRPC-Web on :8080),
            with the edge's deadline, retries, auth and rate limit`;

class Refusal extends Error {}

function fail(message: string, status: number): never {
  process.stderr.write(`new-service: ${message}\n`);
  process.exit(status);
}

interface Args {
  name: string;
  database: boolean;
  public: boolean;
}

function parseArgs(argv: string[]): Args {
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

/** Env names some config already reads: a new service's `<PREFIX>_*` must not collide with them. */
function knownEnvNames(): Set<string> {
  const files = [
    ...readdirSync(join(root, "packages/runtime/src"), { recursive: true, encoding: "utf8" })
      .filter((f) => f.endsWith(".ts"))
      .map((f) => `packages/runtime/src/${f}`),
    ...readdirSync(join(root, "services")).map((d) => `services/${d}/src/config.ts`),
  ].filter((f) => existsSync(join(root, f)));
  return new Set(files.flatMap((f) => [...read(f).matchAll(/"([A-Z][A-Z0-9_]*)"/g)].map((m) => m[1]!)));
}

/** Why `names` cannot be added (empty when it can). */
function takenProblems(names: ServiceNames, database: boolean, targets: string[]): string[] {
  const out: string[] = [];
  for (const p of [`services/${names.name}`, `proto/${names.snake}`, `packages/proto/src/gen/${names.snake}`, ...targets]) {
    if (existsSync(join(root, p)) && !out.some((o) => o.startsWith(`${p} `))) out.push(`${p} already exists`);
  }
  for (const dir of readdirSync(join(root, "services"))) {
    const file = join(root, "services", dir, "service.json");
    if (!existsSync(file)) continue;
    const m = JSON.parse(readFileSync(file, "utf8")) as { name?: string; apis?: string[]; database?: { schema?: string; role?: string } };
    if (m.name === names.name && dir !== names.name) out.push(`services/${dir}/service.json is already named "${names.name}"`);
    if (database && (m.database?.schema === names.snake || m.database?.role === names.snake))
      out.push(`services/${dir} already uses the schema or role ${names.snake}`);
    if (m.apis?.some((api) => api.startsWith(`${names.protoPackage}.`))) out.push(`services/${dir} already serves the proto package ${names.protoPackage}`);
  }
  const env = knownEnvNames();
  const own = [
    `${names.envPrefix}_URL`,
    `${names.envPrefix}_MAX_CONCURRENT`,
    `${names.envPrefix}_MAX_QUEUE`,
    ...(database ? [`${names.envPrefix}_DB_PASSWORD`] : []),
  ];
  const clash = own.filter((v) => env.has(v));
  if (clash.length > 0) out.push(`its settings would collide with variables already read: ${clash.join(", ")}`);
  return out;
}

interface Plan {
  names: ServiceNames;
  example: ServiceNames;
  ports: { rpc: number; admin: number };
  public: boolean;
  /** New files, relative path -> text. */
  create: Map<string, string>;
}

function plan(args: Args): Plan {
  const shape = nameProblems(args.name);
  if (shape.length > 0) throw new Refusal(`refused: ${shape.join("; ")}. Nothing was changed.`);
  const names = deriveNames(args.name);
  const example = exampleFor(args.database);
  const map = tokenMap(example, names);
  const sources = exampleFiles(root, example);
  const targets = sources.map((f) => renamePath(f, map));
  const taken = takenProblems(names, args.database, targets);
  if (taken.length > 0) throw new Refusal(`refused: "${args.name}" is taken:\n  - ${taken.join("\n  - ")}\nNothing was changed. Pick another name.`);

  const ports = nextPortPair(manifestPorts(root));
  const create = new Map<string, string>();
  sources.forEach((source, i) => {
    const target = targets[i]!;
    const text = read(source);
    // The manifest is written, not copied: its ports, description and public flag are the new service's.
    create.set(
      target,
      target === `services/${names.name}/service.json` ? renderManifest(JSON.parse(text), { names, ports, public: args.public, map }) : renameText(text, map),
    );
  });
  return { names, example, ports, public: args.public, create };
}

/** Each file, or every file under each directory (relative to root), with its content, to restore it exactly. */
function snapshot(paths: string[]): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const path of paths) {
    const abs = join(root, path);
    if (!existsSync(abs)) continue;
    if (statSync(abs).isFile()) out.set(path, readFileSync(abs));
    else
      for (const e of readdirSync(abs, { withFileTypes: true, recursive: true }))
        if (e.isFile()) out.set(relative(root, join(e.parentPath, e.name)), readFileSync(join(e.parentPath, e.name)));
  }
  return out;
}

/** A tool from node_modules/.bin directly: npx would cost a node start-up each. */
const bin = (name: string) => join(root, "node_modules", ".bin", name);

function run(title: string, cmd: string, args: string[]): void {
  const r = spawnSync(cmd, args, { cwd: root, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`${title} failed (exit ${r.status ?? r.signal}):\n${r.stdout}${r.stderr}`);
}

function main(): void {
  let todo: Plan;
  try {
    todo = plan(parseArgs(process.argv.slice(2)));
  } catch (e) {
    if (e instanceof Refusal) fail(e.message, 2);
    throw e;
  }
  const { names, ports } = todo;
  // The Kubernetes pool every service with a database gets unless its manifest sets one: a new one may shrink it.
  // Reported only: a repository whose manifests or servers cannot be planned gets no line (generate:services names the problem).
  const sharedPool = (): number | undefined => {
    try {
      return planDatabasePools(readServiceManifests(root), readPostgresServers(root)).derived;
    } catch {
      return undefined;
    }
  };
  const poolBefore = sharedPool();

  // What the tools below rewrite, to put back exactly if one of them fails.
  const generated = ["packages/proto/src/gen"];
  const before = new Map([...snapshot(generated), ...snapshot(["packages/proto/src/index.ts", "package-lock.json"])]);
  const rollback = () => {
    for (const dir of [`services/${names.name}`, `proto/${names.snake}`]) rmSync(join(root, dir), { recursive: true, force: true });
    for (const path of todo.create.keys()) rmSync(join(root, path), { force: true });
    for (const dir of generated) rmSync(join(root, dir), { recursive: true, force: true });
    for (const [path, bytes] of before) {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      writeFileSync(join(root, path), bytes);
    }
  };

  try {
    for (const [path, text] of todo.create) {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      writeFileSync(join(root, path), text, { flag: "wx" });
    }
    // Renaming changes line lengths: the copy is formatted as the repository is (biome.json), so npm test's check passes.
    run("biome format", bin("biome"), ["format", "--write", ...[...todo.create.keys()].filter((p) => /\.(ts|js|mjs)$/.test(p))]);
    run("buf lint", bin("buf"), ["lint"]);
    run("buf format", bin("buf"), ["format", "--diff", "--exit-code"]);
    run("npm run generate", "npm", ["run", "--silent", "generate"]);
    // The lock file lists every workspace; `npm ci` (CI, the image) refuses a stale one.
    run("npm install --package-lock-only", "npm", ["install", "--package-lock-only", "--offline", "--ignore-scripts", "--no-audit", "--no-fund"]);
    regenerateServiceArtifacts(root);
  } catch (e) {
    rollback();
    fail(`${e instanceof Error ? e.message : String(e)}\nEvery change was rolled back.`, 1);
  }

  const say = (line = "") => process.stdout.write(`${line}\n`);
  const kind = todo.example === examples.database ? `with its own schema ${names.snake}` : "without a database";
  say(
    `new-service: added "${names.name}", a copy of ${todo.example.name} (${kind}${todo.public ? ", published by the gateway" : ""}) on ports ${ports.rpc} (rpc) / ${ports.admin} (admin)`,
  );
  say();
  say("created:");
  for (const path of [...todo.create.keys(), `packages/proto/src/gen/${names.snake}/v1/${names.snake}_pb.ts`]) say(`  ${path}`);
  say("regenerated: packages/proto/src/index.ts, package-lock.json");
  say("regenerated from the service manifests: compose, Kubernetes, prometheus, the gateway's APIs (npm run generate:services)");
  const poolAfter = sharedPool();
  if (todo.example === examples.database && poolAfter !== undefined) {
    say(
      `  Kubernetes: DB_POOL_MAX ${poolAfter} per pod for each service with a database that sets none, its share of ${postgresServersFile}${poolAfter === poolBefore || poolBefore === undefined ? "" : ` (was ${poolBefore}: the server is shared by one more)`}`,
    );
  }
  say();
  say("next:");
  say(`  npm test -- services/${names.name}/src/${names.name}-service.spec.ts test/e2e/${names.name}.test.ts`);
  say("  npm test                      everything");
  say(`  replace the example API in proto/${names.snake}/v1/${names.snake}.proto, then npm run generate`);
  say(`  npm start                     starts it with the platform (services/${names.name}/service.json)`);
  say('  let a service call it: docs/adding-a-service.md, "Calling the new service"');
}

main();
