/**
 * The image, run on this machine without a container engine: the
 * Dockerfile's build stage (its RUN steps after `npm ci`, which already ran
 * here) writes the runtime tree to a temporary folder instead of /runtime;
 * then every service docker-compose.yml defines starts as a process in that
 * folder (the image's WORKDIR) with exactly the image's CMD and its ENV
 * plus the service's compose environment, against a real PostgreSQL set up
 * by compose's init script. Host names and ports are replaced by loopback
 * ones allocated here, HOST by 127.0.0.1, `${...}` by test values; nothing
 * else is inherited from this process (no NODE_OPTIONS, no tsx).
 *
 * The image's HEALTHCHECK decides when a service is up; ListProducts,
 * PlaceOrder and GetOrder go through the gateway; SIGTERM must end each
 * with status 0. It fails when the command runs TypeScript (there is none
 * in the tree, nor tsx), when the tree ships sources, tests or a
 * development tool, when the connect-es patch is missing from it, or when
 * a service does not come up or answer.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync, type ChildProcess, type SpawnSyncReturns } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { once } from "node:events";
import { dirname, join, relative } from "node:path";
import { createClient } from "@connectrpc/connect";
import { Copy } from "dockerfile-ast";
import pg from "pg";
import { findFreePort, startEmbeddedPostgres } from "@platform/embedded-postgres";
import { checkoutV1 } from "@platform/proto";
import { forbiddenInRuntime } from "../../scripts/build/runtime-rules.js";
import { readServiceManifests } from "@platform/registry";
import { composeEnvironment, readCompose, readDockerfile, type Stage, tempDataDir, transportFor } from "@platform/test-support";

const root = process.cwd();
const host = "127.0.0.1";

function runSteps(stage: Stage): string[] {
  return stage.instructions.filter((i) => i.getKeyword() === "RUN").map((i) => i.getArgumentsContent() ?? "");
}

/** Every file under `dir`, relative, node_modules left out. */
function filesOutsideNodeModules(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && !relative(dir, e.parentPath).split("/").includes("node_modules"))
    .map((e) => relative(dir, join(e.parentPath, e.name)));
}

/** The files each patches/*.patch changes, with the first line it adds to each. */
function patchedFiles(): { file: string; added: string }[] {
  const out: { file: string; added: string }[] = [];
  for (const name of readdirSync(join(root, "patches")).filter((n) => n.endsWith(".patch"))) {
    let current: string | undefined;
    for (const line of readFileSync(join(root, "patches", name), "utf8").split("\n")) {
      const header = /^\+\+\+ b\/(.*)$/.exec(line);
      if (header) current = header[1];
      else if (current && line.startsWith("+") && line.trim().length > 2) {
        out.push({ file: current, added: line.slice(1) });
        current = undefined;
      }
    }
  }
  return out;
}

interface Running {
  name: string;
  child: ChildProcess;
  env: Record<string, string>;
  output: () => string;
}

test("the image's command and compose's environment run every service (the four, and any added) from built JavaScript", async (t) => {
  const image = readDockerfile(root);
  const [build] = image.stages;
  assert.ok(build && image.stages.length >= 2, "a build stage and a runtime stage");
  const copies = image.runtime.instructions.filter((i): i is Copy => i instanceof Copy);
  assert.equal(copies.length, 1, "the runtime stage copies one thing");
  const copy = copies[0]!;
  assert.equal(copy.getFromFlag()?.getValue(), build?.name, "from the build stage");
  const [treeInImage, workdir] = (copy.getArgumentsContent() ?? "").trim().split(/\s+/);
  assert.ok(
    treeInImage && workdir === image.workdir,
    `the runtime stage copies one tree from the build stage into its WORKDIR: ${copy?.getArgumentsContent()}`,
  );

  const scratch = tempDataDir();
  t.after(() => rmSync(scratch, { recursive: true, force: true }));
  const app = join(scratch, "app");

  // --- the build stage, after npm ci ---
  const steps = runSteps(build!);
  assert.match(steps[0] ?? "", /^npm ci\b/, "the build stage installs with npm ci first (already done on this machine)");
  // The tree's path as a whole shell word (not inside scripts/runtime-tree.ts).
  const treeWord = new RegExp(`(?<=^|\\s)${treeInImage!.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}(?=\\s|$)`, "g");
  assert.ok(
    steps.some((s) => s.match(treeWord) !== null),
    `a build step writes ${treeInImage}, which the runtime stage copies`,
  );
  for (const step of steps.slice(1)) {
    const command: string = step.replace(treeWord, app);
    const r: SpawnSyncReturns<string> = spawnSync("sh", ["-c", command], { cwd: root, encoding: "utf8", maxBuffer: 16 * 1024 * 1024 });
    assert.equal(r.status, 0, `${command}\n${r.stdout}\n${r.stderr}`);
  }

  // --- what the runtime stage holds ---
  const shipped = filesOutsideNodeModules(app);
  assert.deepEqual(
    shipped.filter((f) => /\.(c|m)?ts$/.test(f) || f.split("/").includes("src")),
    [],
    "no TypeScript, no sources",
  );
  assert.deepEqual(
    shipped.filter((f) => /\.(spec|test)\.js$/.test(f) || f.split("/").includes("testing")),
    [],
    "no tests",
  );
  assert.ok(shipped.includes("services/gateway/dist/main.js") && shipped.includes("packages/runtime/dist/index.js"), shipped.join("\n"));
  assert.ok(
    shipped.some((f) => /^services\/orders\/migrations\//.test(f)),
    "migrations ship with their service",
  );
  assert.deepEqual(
    forbiddenInRuntime.filter((p) => existsSync(join(app, "node_modules", p))),
    [],
    "no development tool in node_modules",
  );
  const patches = patchedFiles();
  assert.ok(patches.length > 0, "patches/ changes at least one file");
  for (const { file, added } of patches) {
    assert.ok(existsSync(join(app, file)), `${file} (patched) is in the image`);
    assert.ok(readFileSync(join(app, file), "utf8").includes(added), `${file} carries the patch (${added.trim()})`);
  }

  // --- PostgreSQL, as compose sets it up ---
  const compose = readCompose(root);
  // Every secret compose mounts (/run/secrets/<name>, from SECRETS_DIR), as files here; no variable holds a password.
  const secretsDir = join(scratch, "secrets");
  mkdirSync(secretsDir);
  const secretFile = (path: string) => path.replace(/^\/run\/secrets\//, `${secretsDir}/`);
  for (const name of Object.keys(compose.secrets ?? {})) writeFileSync(join(secretsDir, name), `test-${name}\n`);
  const noVariables = () => undefined;
  const pgEnv = composeEnvironment(compose.services["postgres"]!, noVariables);
  const postgres = await startEmbeddedPostgres({ dataDir: join(scratch, "postgres"), port: 0, host, superuser: pgEnv["POSTGRES_USER"]! });
  t.after(() => postgres.stop("fast"));
  const database = pgEnv["POSTGRES_DB"]!;
  await withClient(postgres.url, (c) => c.query(`CREATE DATABASE ${pg.escapeIdentifier(database)}`));
  // The init script's SQL with its psql variables: `-v name="$VAR"` from the postgres container's
  // environment, `-v name="$(cat "$VAR_FILE")"` from the secret file that variable names.
  const initScript = readFileSync(join(root, "deploy/compose/postgres-init.sh"), "utf8");
  const initSql = /<<'SQL'\n([\s\S]*?)\nSQL\n/.exec(initScript)?.[1];
  assert.ok(initSql, "deploy/compose/postgres-init.sh runs one SQL heredoc");
  const fromFile = (variable: string) => {
    const path = pgEnv[variable] ?? assert.fail(`postgres-init.sh reads $${variable}, which the postgres environment does not set`);
    return readFileSync(secretFile(path), "utf8").replace(/\n$/, "");
  };
  const psqlVars = Object.fromEntries([
    ...[...initScript.matchAll(/-v (\w+)="\$(\w+)"/g)].map((m) => [m[1]!, pgEnv[m[2]!]]),
    ...[...initScript.matchAll(/-v (\w+)="\$\(cat "\$(\w+)"\)"/g)].map((m) => [m[1]!, fromFile(m[2]!)]),
  ]);
  const psqlVar = (v: string) => psqlVars[v] ?? assert.fail(`postgres-init.sh uses :${v}, which no -v sets`);
  const sql = initSql
    .replace(/:"(\w+)"/g, (_a, v: string) => pg.escapeIdentifier(psqlVar(v)))
    .replace(/:'(\w+)'/g, (_a, v: string) => pg.escapeLiteral(psqlVar(v)));
  const dbUrl = new URL(postgres.url);
  dbUrl.pathname = `/${database}`;
  await withClient(dbUrl.toString(), (c) => c.query(sql));

  // --- every compose service that runs the image (SERVICE set), on loopback ports ---
  const services = Object.entries(compose.services)
    .map(([name, s]) => ({ name, env: composeEnvironment(s, noVariables) }))
    .filter((s) => s.env["SERVICE"] !== undefined);
  const names = services.map((s) => s.env["SERVICE"]);
  for (const m of readServiceManifests(root).filter((d) => d.deploy))
    assert.ok(names.includes(m.name), `compose runs ${m.name} from the image: ${names.join(", ")}`);
  const endpoints = new Map<string, string>([["postgres:5432", `${host}:${postgres.port}`]]);
  for (const s of services) {
    for (const key of ["PORT", "ADMIN_PORT"]) endpoints.set(`${s.name}:${s.env[key]}`, `${host}:${await findFreePort(host)}`);
  }
  const loopback = (value: string) => value.replace(/\b([a-z][\w-]*):(\d+)\b/g, (all) => endpoints.get(all) ?? all);
  const path = [dirname(process.execPath), "/usr/local/bin", "/usr/bin", "/bin"].join(":");

  const running: Running[] = [];
  t.after(async () => {
    for (const r of running) if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill("SIGKILL");
  });
  for (const s of services) {
    const env: Record<string, string> = { PATH: path, ...image.env };
    for (const [k, v] of Object.entries(s.env)) env[k] = k.endsWith("_FILE") ? secretFile(v) : loopback(v);
    env["HOST"] = host;
    env["PORT"] = endpoints.get(`${s.name}:${s.env["PORT"]}`)!.split(":")[1]!;
    env["ADMIN_PORT"] = endpoints.get(`${s.name}:${s.env["ADMIN_PORT"]}`)!.split(":")[1]!;
    // Compose never loads the demo catalogue; an operator asks for it as this does (what npm start sets: "launcher.env").
    Object.assign(env, readServiceManifests(root).find((m) => m.name === s.env["SERVICE"])?.launcher.env);
    const child = spawn(image.cmd[0]!, image.cmd.slice(1), { cwd: app, env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout!.setEncoding("utf8").on("data", (d: string) => (out += d));
    child.stderr!.setEncoding("utf8").on("data", (d: string) => (out += d));
    running.push({ name: s.name, child, env, output: () => out });
  }

  // --- the image's HEALTHCHECK says when each is up ---
  assert.ok(image.healthcheck, "the image has a HEALTHCHECK");
  await Promise.all(running.map((r) => healthy(r, image.healthcheck!, app)));

  // --- each is plain node on compiled JavaScript ---
  if (existsSync("/proc/self/cmdline")) {
    for (const r of running) {
      const pid = r.child.pid!;
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
      assert.deepEqual(cmdline, ["node", `services/${r.env["SERVICE"]}/dist/main.js`], `${r.name}: sh exec'd node on the built entry`);
      const environ = readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
      assert.deepEqual(
        environ.filter((e) => /^(NODE_OPTIONS|TSX_)/.test(e)),
        [],
        `${r.name}: no NODE_OPTIONS, no tsx settings`,
      );
      const children = readdirSync(`/proc/${pid}/task`).flatMap((task) =>
        readFileSync(`/proc/${pid}/task/${task}/children`, "utf8").trim().split(/\s+/).filter(Boolean),
      );
      assert.deepEqual(children, [], `${r.name}: no child process (tsx keeps an esbuild one)`);
    }
  }

  // --- calls through the gateway ---
  const gateway = running.find((r) => r.env["SERVICE"] === "gateway")!;
  const gatewayUrl = `http://${host}:${gateway.env["PORT"]}`;
  const grpc = createClient(checkoutV1.CheckoutService, transportFor(gatewayUrl, "grpc"));
  const { products } = await grpc.listProducts({});
  assert.ok(
    products.some((p) => p.sku === "MUG-CERAMIC"),
    products.map((p) => p.sku).join(", "),
  );
  const { order } = await grpc.placeOrder({ customerId: "image-command", items: [{ sku: "MUG-CERAMIC", quantity: 2 }] });
  assert.ok(order?.id, "PlaceOrder returns an order");
  const mug = products.find((p) => p.sku === "MUG-CERAMIC")!;
  assert.equal(order.total?.amountMinor, mug.unitPrice!.amountMinor * 2n);
  const again = await createClient(checkoutV1.CheckoutService, transportFor(gatewayUrl, "connect-json")).getOrder({ orderId: order.id });
  assert.equal(again.order?.id, order.id);
  const rows = await withClient(dbUrl.toString(), (c) => c.query("SELECT count(*)::int AS n FROM orders.orders WHERE id = $1", [order.id]));
  assert.equal(rows.rows[0]?.n, 1, "the order is stored once, by the orders role");

  // --- SIGTERM drains and exits 0, edge first ---
  for (const r of [...running].reverse()) {
    const exited = once(r.child, "exit");
    r.child.kill("SIGTERM");
    const [code, signal] = (await exited) as [number | null, NodeJS.Signals | null];
    assert.equal(code, 0, `${r.name} exited ${code ?? signal}:\n${r.output().slice(-2000)}`);
  }
});

async function withClient<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** Runs the healthcheck command in the service's environment until it succeeds; fails if the service exits first. */
async function healthy(r: Running, command: string[], cwd: string): Promise<void> {
  for (let attempt = 0; attempt < 300; attempt++) {
    if (r.child.exitCode !== null || r.child.signalCode !== null)
      assert.fail(`${r.name} exited (${r.child.exitCode ?? r.child.signalCode}):\n${r.output().slice(-3000)}`);
    const check = spawnSync(command[0]!, command.slice(1), { cwd, env: r.env, encoding: "utf8" });
    if (check.status === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  assert.fail(`${r.name} never passed the image's HEALTHCHECK:\n${r.output().slice(-3000)}`);
}
