/**
 * `npm run new-service`, for real: the repository (tracked and untracked
 * working-tree files) is copied to a temporary directory, the generator
 * adds one service with a database and one without, and the copy must then
 * pass what CI runs on them: buf lint and format, the type check, the new
 * unit tests, the new end-to-end tests (the platform started with the new
 * service, called over gRPC), the Kubernetes manifest checks, the
 * repository checks (fresh generated code, docker-compose config) and the
 * observability checks. Bad and taken names are refused without changing a
 * file.
 *
 * The copy's node_modules is a directory of symlinks to this repository's
 * entries, except @platform/*, which point (relatively, as npm links them)
 * at the copy's own workspaces, so the copy runs its own code.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { findFreePort } from "@platform/embedded-postgres";
import { deriveNames, nameProblems } from "../scripts/new-service/names.js";

const origin = process.cwd();
let copy: string;

/** The environment for commands in the copy; without the test runner's marker, so a nested `node --test` reports normally. */
function childEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env["NODE_TEST_CONTEXT"];
  return env;
}

interface Result {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function run(cmd: string, args: string[]): Result {
  return spawnSync(cmd, args, { cwd: copy, env: childEnv(), encoding: "utf8", timeout: 120_000, maxBuffer: 64 * 1024 * 1024 });
}

/** Like run, without blocking: for checks that run side by side. */
function runAsync(cmd: string, args: string[], timeoutMs = 240_000): Promise<Result> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: copy, env: childEnv(), timeout: timeoutMs, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    child.on("error", (e) => resolve({ status: null, signal: null, stdout, stderr: `${stderr}\n${String(e)}` }));
    child.on("close", (status, signal) => resolve({ status, signal, stdout, stderr }));
  });
}

function tail(r: Result, chars = 6000): string {
  return `exit ${r.status ?? r.signal}\n${`${r.stdout}\n${r.stderr}`.slice(-chars)}`;
}

const generate = (...args: string[]) => run(process.execPath, ["--import", "tsx", "scripts/new-service.ts", ...args]);

/** A digest of every file in the copy outside node_modules: any change shows. */
function treeDigest(): string {
  const hash = createHash("sha256");
  const entries = readdirSync(copy, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && !relative(copy, e.parentPath).split("/").includes("node_modules"))
    .map((e) => join(e.parentPath, e.name))
    .sort();
  for (const f of entries) hash.update(relative(copy, f)).update("\0").update(readFileSync(f)).update("\0");
  return hash.digest("hex");
}

function copyRepository(): string {
  const dir = mkdtempSync(join(tmpdir(), "new-service-"));
  const listed = spawnSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: origin, encoding: "utf8" });
  assert.equal(listed.status, 0, listed.stderr);
  for (const file of new Set(listed.stdout.split("\0").filter(Boolean))) {
    if (!existsSync(join(origin, file))) continue; // deleted in the working tree
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    cpSync(join(origin, file), join(dir, file), { verbatimSymlinks: true });
  }
  const modules = join(origin, "node_modules");
  mkdirSync(join(dir, "node_modules"));
  for (const entry of readdirSync(modules)) {
    // npm's hidden lock file stays out: nothing run in the copy may write through to ours.
    if (entry === ".package-lock.json") continue;
    if (entry === "@platform") {
      mkdirSync(join(dir, "node_modules", entry));
      for (const link of readdirSync(join(modules, entry))) symlinkSync(readlinkSync(join(modules, entry, link)), join(dir, "node_modules", entry, link));
    } else symlinkSync(join(modules, entry), join(dir, "node_modules", entry));
  }
  return dir;
}

before(() => {
  copy = copyRepository();
});
after(() => {
  if (copy && !process.env["KEEP_TEST_DATA"]) rmSync(copy, { recursive: true, force: true });
});

describe("npm run new-service", () => {
  test("name rules", () => {
    for (const bad of ["Inventory", "9lives", "stock--level", "stock_level", "-x", "x-", "a".repeat(41), "postgres", "grafana", "public", "pg-stats", "platform"]) {
      assert.notDeepEqual(nameProblems(bad), [], bad);
    }
    for (const good of ["inventory", "stock-level", "a1", "v2-api"]) assert.deepEqual(nameProblems(good), [], good);
    assert.deepEqual(deriveNames("stock-level"), {
      name: "stock-level",
      snake: "stock_level",
      pascal: "StockLevel",
      namespace: "stockLevelV1",
      envPrefix: "STOCK_LEVEL",
      protoPackage: "stock_level.v1",
    });
  });

  test("refuses bad names clearly and changes nothing", () => {
    const before = treeDigest();
    for (const [args, message] of [
      [["Inventory"], /refused: "Inventory" is not a valid service name: use lowercase letters, digits and single dashes/],
      [["postgres"], /"postgres" is reserved: it is a compose service/],
      [["database", "--db"], /collide with variables already read: DATABASE_URL/],
      [["one", "two"], /expected exactly one service name, got 2/],
      [["inventory", "--database"], /unknown option --database/],
    ] as const) {
      const r = generate(...args);
      assert.equal(r.status, 2, `${args.join(" ")}: ${tail(r)}`);
      assert.match(r.stderr, message, args.join(" "));
    }
    assert.equal(treeDigest(), before, "a refused run changed files");
  });

  test("refuses an existing service's name and changes nothing", () => {
    const before = treeDigest();
    const r = generate("pricing");
    assert.equal(r.status, 2, tail(r));
    assert.match(r.stderr, /"pricing" is taken:\n {2}- services\/pricing already exists/);
    assert.match(r.stderr, /Nothing was changed/);
    assert.equal(treeDigest(), before);
  });

  test("a tool failing after the files are written rolls every change back", () => {
    const genConfig = join(copy, "buf.gen.yaml");
    const original = readFileSync(genConfig, "utf8");
    assert.match(original, /local: protoc-gen-es/);
    writeFileSync(genConfig, original.replace("local: protoc-gen-es", "local: protoc-gen-missing-for-this-test"));
    try {
      const before = treeDigest();
      const r = generate("inventory", "--db");
      assert.equal(r.status, 1, tail(r));
      assert.match(r.stderr, /buf generate failed[\s\S]*Every change was rolled back/);
      assert.equal(treeDigest(), before, "the failed run left changes behind");
      assert.ok(!existsSync(join(copy, "services/inventory")) && !existsSync(join(copy, "proto/inventory")));
    } finally {
      writeFileSync(genConfig, original);
    }
  });

  test("adds a service with a database (stock-level) on the next free ports", () => {
    const r = generate("stock-level", "--db");
    assert.equal(r.status, 0, tail(r));
    assert.match(r.stdout, /added "stock-level" \(with its own schema stock_level\) on ports 8086 \(rpc\) \/ 9086 \(admin\)/);
    for (const f of [
      "proto/stock_level/v1/stock_level.proto",
      "packages/proto/src/gen/stock_level/v1/stock_level_pb.ts",
      "services/stock-level/package.json",
      "services/stock-level/src/main.ts",
      "services/stock-level/src/config.ts",
      "services/stock-level/src/routes.ts",
      "services/stock-level/src/stock-level-service.ts",
      "services/stock-level/src/stock-level-service.spec.ts",
      "services/stock-level/migrations/001_create_items.sql",
      "test/e2e/stock-level.test.ts",
      "deploy/k8s/base/stock-level.yaml",
    ]) {
      assert.ok(existsSync(join(copy, f)), `${f} was created`);
    }
    const read = (f: string) => readFileSync(join(copy, f), "utf8");
    assert.match(read("packages/proto/src/index.ts"), /^export \* as stockLevelV1 from "\.\/gen\/stock_level\/v1\/stock_level_pb\.js";$/m);
    assert.match(read("deploy/k8s/base/kustomization.yaml"), /- stock-level\.yaml\n {2}- network-policies\.yaml/);
    assert.match(read("docker-compose.yml"), /^ {2}stock-level:\n {4}<<: \*service\n/m);
    assert.match(read("docker-compose.yml"), /DATABASE_URL: postgres:\/\/stock_level:\$\{STOCK_LEVEL_DB_PASSWORD:\?set STOCK_LEVEL_DB_PASSWORD\}@postgres:5432\/platform/);
    assert.match(read("deploy/compose/postgres-init.sh"), /CREATE ROLE stock_level LOGIN PASSWORD :'stock_level_pw';/);
    assert.match(read("observability/prometheus.yml"), /- targets: \["stock-level:9086"\]/);
    assert.match(read("package-lock.json"), /"services\/stock-level": \{/, "the lock file lists the new workspace (npm ci)");
    // main.ts is as small as pricing's: the runtime does the wiring.
    const lines = (f: string) => read(f).split("\n").length;
    assert.ok(lines("services/stock-level/src/main.ts") <= lines("services/pricing/src/main.ts"));
  });

  test("adds a public service without a database (greeter) on the pair after: the gateway publishes it", () => {
    const r = generate("greeter", "--public");
    assert.equal(r.status, 0, tail(r));
    assert.match(r.stdout, /added "greeter" \(without a database, published by the gateway\) on ports 8087 \(rpc\) \/ 9087 \(admin\)/);
    const read = (f: string) => readFileSync(join(copy, f), "utf8");
    assert.ok(!existsSync(join(copy, "services/greeter/migrations")));
    assert.doesNotMatch(read("services/greeter/src/main.ts"), /database/i);
    assert.match(read("services/gateway/src/forwarded-apis.ts"), /^ {2}\{ service: greeterV1\.GreeterService, dependency: "greeter", defaultUrl: "http:\/\/127\.0\.0\.1:8087" \},$/m);
    assert.match(read("services/gateway/src/forwarded-apis.ts"), /^import \{ greeterV1 \} from "@platform\/proto";$/m);
    assert.match(read("docker-compose.yml"), /^ {6}CHECKOUT_URL: http:\/\/checkout:8081\n {6}GREETER_URL: http:\/\/greeter:8087$/m);
    assert.match(read("docker-compose.yml"), /^ {4}depends_on:\n {6}checkout:\n {8}condition: service_healthy\n {6}greeter:\n {8}condition: service_healthy\n/m);
    assert.match(read("deploy/k8s/base/gateway.yaml"), /- name: GREETER_URL\n {14}value: http:\/\/greeter:8087/);
    assert.match(read("test/kubernetes-manifests.test.ts"), /greeter: \["gateway"\]/);
    // stock-level is internal: nothing calls it, so no route at the gateway.
    assert.doesNotMatch(read("services/gateway/src/forwarded-apis.ts"), /stock/i);
    assert.deepEqual(JSON.parse(read("services/greeter/package.json")).platform, { port: 8087, adminPort: 9087, database: false });
  });

  test("running it again for the same name is refused and changes nothing", () => {
    const before = treeDigest();
    const r = generate("greeter");
    assert.equal(r.status, 2, tail(r));
    assert.match(r.stderr, /"greeter" is taken:[\s\S]*services\/greeter already exists[\s\S]*Nothing was changed/);
    assert.equal(treeDigest(), before);
  });

  describe("the copy with both services passes", () => {
    // TAP by name: node 22 and later report in the spec format even to a pipe, and the checks below read TAP's summary.
    const node = (...args: string[]) => [process.execPath, ["--import", "tsx", "--test", "--test-reporter=tap", ...args]] as const;
    // The end-to-end tests (the long pole) run beside the static checks, which run one after another.
    let e2e: Promise<Result>;
    let checks: Promise<Map<string, Result>>;
    before(() => {
      const [cmd, args] = node("--test-timeout=120000", "test/e2e/stock-level.test.ts", "test/e2e/greeter.test.ts");
      e2e = runAsync(cmd, [...args]);
      checks = (async () => {
        const results = new Map<string, Result>();
        for (const [title, [cmd, args]] of [
          ["buf lint", ["npx", ["buf", "lint"]]],
          ["buf format", ["npx", ["buf", "format", "--diff", "--exit-code"]]],
          ["tsc", ["npx", ["tsc", "--noEmit", "-p", "tsconfig.json"]]],
          ["unit", node("services/stock-level/src/stock-level-service.spec.ts", "services/greeter/src/greeter-service.spec.ts")],
          ["kubernetes", node("test/kubernetes-manifests.test.ts")],
          ["repository", node("test/repository.test.ts")],
          ["observability", node("test/observability.test.ts")],
          ["audit", ["npm", ["run", "--silent", "audit"]]],
        ] as const) {
          results.set(title, await runAsync(cmd, [...args]));
        }
        return results;
      })();
    });
    const check = async (title: string) => {
      const r = (await checks).get(title);
      assert.ok(r);
      return r;
    };
    const ok = (r: Result, what: string) => assert.equal(r.status, 0, `${what} failed in ${copy}:\n${tail(r)}`);

    test("buf lint and buf format", async () => {
      ok(await check("buf lint"), "buf lint");
      ok(await check("buf format"), "buf format");
    });

    test("the type check", async () => {
      const r = await check("tsc");
      if (r.status === 0) return;
      // Work in progress elsewhere in the working tree may not type-check;
      // fail only on errors that the generated services brought.
      const theirs = spawnSync("npx", ["tsc", "--noEmit", "-p", "tsconfig.json"], { cwd: origin, encoding: "utf8" }).stdout;
      const fresh = r.stdout.split("\n").filter((l) => /error TS/.test(l) && !theirs.includes(l));
      assert.deepEqual(fresh, [], tail(r));
    });

    test("the generated unit tests", async () => {
      ok(await check("unit"), "the unit tests");
    });

    test("the generated end-to-end tests: the platform with each service, called over gRPC, greeter through the gateway", async () => {
      const r = await e2e;
      ok(r, "the end-to-end tests");
      assert.match(r.stdout, /^# pass 13$/m, r.stdout.slice(-3000));
    });

    test("npm start starts both with the platform, and a client reaches greeter through the gateway", async () => {
      await e2e; // one platform at a time on two cores
      const dataDir = mkdtempSync(join(tmpdir(), "new-service-start-"));
      chmodSync(dataDir, 0o755); // the embedded database runs as an unprivileged user when we are root
      // npm start itself: it builds the copy (the new services included), then runs it compiled.
      const child = spawn("npm", ["start"], {
        cwd: copy,
        env: {
          ...childEnv(),
          DATA_DIR: dataDir,
          FREE_PORTS: "1",
          GATEWAY_PORT: String(await findFreePort("127.0.0.1")),
          EMBEDDED_POSTGRES_PORT: String(await findFreePort("127.0.0.1")),
        },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let out = "";
      child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
      child.stderr.setEncoding("utf8").on("data", (d: string) => (out += d));
      const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
      try {
        const started = await Promise.race([
          exited.then(() => false),
          (async () => {
            for (let i = 0; i < 1200 && !/ready in \d+ ms: gateway listening on/.test(out); i++) await new Promise((r) => setTimeout(r, 100));
            return /ready in \d+ ms/.test(out);
          })(),
        ]);
        assert.ok(started, `npm start did not get ready:\n${out}`);
        assert.match(out, /^\[platform\] greeter +ready on http:\/\/127\.0\.0\.1:\d+/m);
        assert.match(out, /^\[platform\] stock-level +ready on http:\/\/127\.0\.0\.1:\d+/m);
        if (existsSync("/proc/self/cmdline")) {
          for (const name of ["greeter", "stock-level"]) {
            const pid = new RegExp(`^\\[platform\\] ${name} +ready on \\S+ \\(pid (\\d+)`, "m").exec(out)?.[1];
            assert.match(readFileSync(`/proc/${pid}/cmdline`, "utf8"), new RegExp(`services/${name}/dist/main\\.js`), `${name} runs from its build`);
          }
        }
        const gatewayUrl = /gateway listening on (http:\/\/\S+)/.exec(out)?.[1];
        const res = await fetch(`${gatewayUrl}/greeter.v1.GreeterService/GetItem`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ id: "example" }),
        });
        assert.equal(res.status, 200);
        assert.deepEqual(await res.json(), { item: { id: "example", name: "An example item" } });
      } finally {
        child.kill("SIGTERM");
        const code = await exited;
        rmSync(dataDir, { recursive: true, force: true });
        assert.equal(code, 0, out.slice(-3000));
      }
    });

    test("the Kubernetes manifest checks", async () => {
      ok(await check("kubernetes"), "test/kubernetes-manifests.test.ts");
    });

    test("the repository checks: generated code is fresh, docker-compose config is valid and closed", async () => {
      const r = await check("repository");
      ok(r, "test/repository.test.ts");
      const hasCompose = spawnSync("docker-compose", ["version"], { stdio: "ignore" }).status === 0;
      if (hasCompose) assert.match(r.stdout, /^# skipped 0$/m, "the compose check ran");
    });

    test("the observability checks: the new services are scraped", async () => {
      ok(await check("observability"), "test/observability.test.ts");
    });

    test("the resilience audit passes, with the public service in the call graph", async () => {
      const r = await check("audit");
      ok(r, "npm run audit");
      assert.match(r.stdout, /^call graph: gateway -> checkout, gateway -> greeter, /m);
      assert.match(r.stdout, /GetItem: 3 = 3 attempts at greeter \(gateway -> greeter\); budget-capped at 1\.1x/);
    });
  });
});
