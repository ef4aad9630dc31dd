/**
 * `npm run new-service`, for real: the repository (tracked and untracked
 * working-tree files) is copied to a temporary directory, the generator
 * copies one example with a database and one without (published by the
 * gateway), and the copy must then pass what CI runs on them: buf lint and
 * format, the type check, the new unit tests, the new end-to-end tests (the
 * platform started with the new service, called over gRPC), `npm start`
 * with both, the Kubernetes checks (kubectl kustomize on every overlay, the
 * manifest test), the compose check (docker-compose config), the
 * observability checks and the resilience audit. Bad and taken names are
 * refused without changing a file.
 *
 * Nothing here assumes which names are free or which ports: the names are
 * the first free ones in the copy, the ports are read back from the
 * manifests the generator wrote and checked against every other manifest.
 *
 * The copy's node_modules is a directory of symlinks to this repository's
 * entries, except @platform/*, which point (relatively, as npm links them)
 * at the copy's own workspaces, so the copy runs its own code.
 *
 * Its cost, on two cores shared with other test files: one platform at a
 * time (npm start's, then one for both copied end-to-end files, which run in
 * one process, share it and run the build npm start made), and a type check
 * of what the generator wrote or changed with everything it imports, not of
 * the whole repository again (npm test's own type check covers the rest, the
 * examples included). Where each CPU second goes: docs/testing.md, "The
 * generator test".
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { findFreePort } from "@platform/embedded-postgres";
import { kubectlPath } from "@platform/k8s-check";
import { readServiceManifests } from "@platform/registry";
import { exampleFiles, examples } from "../scripts/new-service/examples.js";
import { deriveNames, nameProblems } from "../scripts/new-service/names.js";
import { manifestPorts, nextPortPair } from "../scripts/new-service/ports.js";
import { regenerateScript } from "../scripts/new-service/regenerate.js";
import { renamePath, renameText, tokenMap } from "../scripts/new-service/token-map.js";
import { copyRepository } from "./repository-copy.js";

const origin = process.cwd();
let copy: string;

/** The environment for commands in the copy; without the test runner's marker, so a nested `node --test` reports normally. */
function childEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env["NODE_TEST_CONTEXT"];
  // npm test built our dist/, not the copy's: a platform in the copy runs its sources (the launcher's default, under tsx)
  // unless the copy was built first (runAsync's env: the end-to-end tests, after npm start built it).
  delete env["PLATFORM_SERVICES_FROM"];
  // The copy has no tools/kubectl/bin (ignored by git): its manifest checks use ours.
  env["KUBECTL"] ??= kubectlPath();
  return env;
}

interface Result {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv = {}): Result {
  // A bound for a hung tool, not a speed check: the generator takes ~10 s alone and over 120 s on two cores shared with a loaded suite.
  return spawnSync(cmd, args, { cwd: copy, env: { ...childEnv(), ...env }, encoding: "utf8", timeout: 300_000, maxBuffer: 64 * 1024 * 1024 });
}

/** Like run, without blocking: for checks that run side by side. */
function runAsync(cmd: string, args: string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 240_000): Promise<Result> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: copy, env: { ...childEnv(), ...env }, timeout: timeoutMs, stdio: ["ignore", "pipe", "pipe"] });
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

/** A tool from node_modules/.bin directly (the copy's links to ours): npx would cost a node start-up each. */
const bin = (name: string) => join(copy, "node_modules", ".bin", name);
const generate = (...args: string[]) => run(process.execPath, ["--import", "tsx", "scripts/new-service.ts", ...args]);
const readCopy = (f: string) => readFileSync(join(copy, f), "utf8");

/**
 * A file's digest, kept with the stat it was read at (inode, size, change
 * and modification times): a file is read and hashed again only when one of
 * them moved, which every write does (ctime cannot be set back, and the
 * tools that write run between two takes, never during one).
 * The tree is taken about twenty times, and hashing all of it each time was
 * 3 CPU seconds.
 */
const digestCache = new Map<string, { stamp: string; digest: string }>();
function digestOf(f: string): string {
  const st = statSync(f, { bigint: true });
  const stamp = `${st.size}:${st.ctimeNs}:${st.mtimeNs}:${st.ino}`;
  const cached = digestCache.get(f);
  if (cached?.stamp === stamp) return cached.digest;
  const digest = createHash("sha256").update(readFileSync(f)).digest("hex");
  digestCache.set(f, { stamp, digest });
  return digest;
}

/** Every file in the copy outside node_modules, with a digest of its content: any change shows. */
function treeDigests(): Map<string, string> {
  const out = new Map<string, string>();
  for (const e of readdirSync(copy, { recursive: true, withFileTypes: true })) {
    if (!e.isFile() || relative(copy, e.parentPath).split("/").includes("node_modules")) continue;
    const f = join(e.parentPath, e.name);
    out.set(relative(copy, f), digestOf(f));
  }
  return out;
}
const treeDigest = () =>
  createHash("sha256")
    .update(JSON.stringify([...treeDigests()].sort()))
    .digest("hex");

/** Files added, changed or removed between two treeDigests. */
function changedFiles(before: Map<string, string>, after: Map<string, string>): string[] {
  return [...new Set([...before.keys(), ...after.keys()])].filter((f) => before.get(f) !== after.get(f)).sort();
}

/** `base`, or `base-2`, `base-3`, ...: the first name no folder, proto package or manifest in the copy uses. */
function freeName(base: string): string {
  for (let i = 1; ; i++) {
    const name = i === 1 ? base : `${base}-${i}`;
    const n = deriveNames(name);
    const taken = [`services/${n.name}`, `proto/${n.snake}`, `packages/proto/src/gen/${n.snake}`, `test/e2e/${n.name}.test.ts`].some((p) =>
      existsSync(join(copy, p)),
    );
    if (!taken) return name;
  }
}

before(() => {
  copy = copyRepository(origin, "new-service-");
});
after(() => {
  if (copy && !process.env["KEEP_TEST_DATA"]) rmSync(copy, { recursive: true, force: true });
});

describe("the generator's parts", () => {
  test("name rules", () => {
    for (const bad of [
      "Inventory",
      "9lives",
      "stock--level",
      "stock_level",
      "-x",
      "x-",
      "a".repeat(41),
      "postgres",
      "grafana",
      "public",
      "pg-stats",
      "platform",
    ]) {
      assert.notDeepEqual(nameProblems(bad), [], bad);
    }
    for (const good of ["inventory", "stock-level", "a1", "v2-api"]) assert.deepEqual(nameProblems(good), [], good);
    assert.deepEqual(deriveNames("stock-level"), {
      name: "stock-level",
      snake: "stock_level",
      pascal: "StockLevel",
      camel: "stockLevel",
      namespace: "stockLevelV1",
      envPrefix: "STOCK_LEVEL",
      protoPackage: "stock_level.v1",
    });
  });

  test("the token map renames whole names and identifier starts, never part of a longer word", () => {
    const map = tokenMap(examples.database, deriveNames("stock-level"));
    assert.equal(
      renameText("example-notes example_notes.v1.ExampleNotesService exampleNotesV1 EXAMPLE_NOTES_URL @platform/example-notes example-notes-db", map),
      "stock-level stock_level.v1.StockLevelService stockLevelV1 STOCK_LEVEL_URL @platform/stock-level stock-level-db",
    );
    assert.equal(renameText("example-notes2 myexample-notes xexampleNotes example_notesy", map), "example-notes2 myexample-notes xexampleNotes example_notesy");
    assert.equal(renamePath("services/example-notes/src/example-notes-service.spec.ts", map), "services/stock-level/src/stock-level-service.spec.ts");
  });

  test("renaming either example leaves none of its names behind, in any file or path", () => {
    for (const example of Object.values(examples)) {
      const map = tokenMap(example, deriveNames("stock-level"));
      const leftover = new RegExp(`${example.name.replace("-", "[-_ ]?")}|${example.pascal}`, "i");
      const files = exampleFiles(origin, example);
      assert.ok(files.length >= 7, `${example.name}: ${files.join(", ")}`);
      for (const file of files) {
        const renamed = renameText(readFileSync(join(origin, file), "utf8"), map);
        assert.doesNotMatch(renamePath(file, map), leftover, file);
        assert.doesNotMatch(renamed, leftover, `${file} still names ${example.name}: ${leftover.exec(renamed)?.[0]}`);
      }
      assert.ok(files.includes(`test/e2e/${example.name}.test.ts`) && files.includes(`proto/${example.snake}/v1/${example.snake}.proto`), example.name);
    }
  });

  test("ports: the smallest pair 808x/908x that no manifest uses, skipping Prometheus' 9090", () => {
    assert.deepEqual(nextPortPair(new Set([8080, 9080, 8081, 9081, 8083, 9083])), { rpc: 8082, admin: 9082 });
    assert.deepEqual(nextPortPair(new Set([8082, 9081])), { rpc: 8083, admin: 9083 }, "both ports of the pair must be free");
    const busy = new Set(Array.from({ length: 9 }, (_, i) => [8081 + i, 9081 + i]).flat());
    assert.deepEqual(nextPortPair(busy), { rpc: 8091, admin: 9091 });
    const used = manifestPorts(origin);
    for (const port of [8080, 9080, 8083, 9083]) assert.ok(used.has(port), `the built-in manifests' port ${port}`);
  });
});

describe("npm run new-service", () => {
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

  test("refuses an existing service's name, an example's included, and changes nothing", () => {
    const before = treeDigest();
    // A deployed service with a database (whichever the manifests list first), and the example --db copies.
    const existing = readServiceManifests(copy).find((m) => m.deploy && m.database);
    assert.ok(existing, "a deployed service with a database");
    for (const name of [existing.name, examples.database.name]) {
      const r = generate(name, "--db");
      assert.equal(r.status, 2, tail(r));
      assert.match(r.stderr, new RegExp(`"${name}" is taken:\\n {2}- services/${name} already exists`));
      assert.match(r.stderr, /Nothing was changed/);
    }
    assert.equal(treeDigest(), before);
  });

  test("a tool failing after the files are written rolls every change back", () => {
    const genConfig = join(copy, "buf.gen.yaml");
    const original = readFileSync(genConfig, "utf8");
    assert.match(original, /local: protoc-gen-es/);
    writeFileSync(genConfig, original.replace("local: protoc-gen-es", "local: protoc-gen-missing-for-this-test"));
    try {
      const before = treeDigest();
      const name = freeName("inventory");
      const r = generate(name, "--db");
      assert.equal(r.status, 1, tail(r));
      assert.match(r.stderr, /npm run generate failed[\s\S]*Every change was rolled back/);
      assert.equal(treeDigest(), before, "the failed run left changes behind");
      assert.ok(!existsSync(join(copy, `services/${name}`)) && !existsSync(join(copy, `proto/${deriveNames(name).snake}`)));
    } finally {
      writeFileSync(genConfig, original);
    }
  });

  /** Every TypeScript file the generator wrote or changed, for the type check. */
  const writtenTypeScript = new Set<string>();
  const withDb = { name: "", ports: { rpc: 0, admin: 0 } };
  const published = { name: "", ports: { rpc: 0, admin: 0 } };

  /** Generates, then checks what every generated service must be; returns its manifest. */
  function generated(name: string, flags: string[], example: typeof examples.plain) {
    const before = treeDigests();
    const expectedPorts = nextPortPair(manifestPorts(copy));
    const r = generate(name, ...flags);
    assert.equal(r.status, 0, tail(r));
    const n = deriveNames(name);
    const manifest = JSON.parse(readCopy(`services/${name}/service.json`)) as {
      name: string;
      ports: { rpc: number; admin: number };
      apis: string[];
      public: boolean;
      database?: unknown;
    };
    assert.match(
      r.stdout,
      new RegExp(`added "${name}", a copy of ${example.name} .* on ports ${manifest.ports.rpc} \\(rpc\\) / ${manifest.ports.admin} \\(admin\\)`),
    );
    assert.deepEqual(manifest.ports, expectedPorts, "the next free pair");
    for (const dir of readdirSync(join(copy, "services")).filter((d) => d !== name && existsSync(join(copy, "services", d, "service.json")))) {
      const other = JSON.parse(readCopy(`services/${dir}/service.json`)) as { ports: Record<string, number> };
      for (const port of Object.values(manifest.ports)) assert.ok(!Object.values(other.ports).includes(port), `${dir} already uses ${port}`);
    }
    assert.deepEqual(manifest.apis, [`${n.protoPackage}.${n.pascal}Service`]);
    assert.match(readCopy("packages/proto/src/index.ts"), new RegExp(`^export \\* as ${n.namespace} from "\\./gen/${n.snake}/v1/${n.snake}_pb\\.js";$`, "m"));
    assert.match(readCopy("package-lock.json"), new RegExp(`"services/${name}": \\{`), "the lock file lists the new workspace (npm ci)");
    // Every file it wrote is the service's own or generated; no shared file was edited by the program.
    const own = (f: string) =>
      f.startsWith(`services/${name}/`) ||
      f.startsWith(`proto/${n.snake}/`) ||
      f.startsWith(`packages/proto/src/gen/${n.snake}/`) ||
      [`test/e2e/${name}.test.ts`, "packages/proto/src/index.ts", "package-lock.json"].includes(f);
    const changed = changedFiles(before, treeDigests());
    for (const f of changed) if (f.endsWith(".ts") && existsSync(join(copy, f))) writtenTypeScript.add(f);
    assert.match(r.stdout, /regenerated from the service manifests/);
    // Every other changed file is one the registry's generator derives from the manifests; running it again must change nothing.
    for (const f of changed.filter((f) => !own(f)))
      assert.match(readCopy(f), /generated from \S+ by npm run generate:services; do not edit/, `${f} was edited but is not generated`);
    const again = treeDigests();
    const rerun = run("npm", ["run", "--silent", regenerateScript]);
    assert.equal(rerun.status, 0, tail(rerun));
    assert.deepEqual(changedFiles(again, treeDigests()), [], "the derived artifacts were fresh");
    return manifest;
  }

  test("copies the example with a database under a free name, on the next free ports", () => {
    withDb.name = freeName("stock-level");
    const manifest = generated(withDb.name, ["--db"], examples.database);
    withDb.ports = manifest.ports;
    const n = deriveNames(withDb.name);
    assert.deepEqual(manifest.database, { schema: n.snake, role: n.snake });
    assert.equal(manifest.public, false);
    for (const f of [
      `services/${n.name}/migrations/001_create_notes.sql`,
      `services/${n.name}/src/${n.name}-service.spec.ts`,
      `services/${n.name}/src/main.ts`,
      `test/e2e/${n.name}.test.ts`,
    ]) {
      assert.ok(existsSync(join(copy, f)), `${f} was created`);
    }
    assert.match(readCopy(`services/${n.name}/migrations/001_create_notes.sql`), new RegExp(`CREATE TABLE ${n.snake}\\.notes`));
    assert.equal(JSON.parse(readCopy(`services/${n.name}/package.json`)).name, `@platform/${n.name}`);
  });

  test("copies the example without a database, published by the gateway (--public), on the pair after", () => {
    published.name = freeName("greeter");
    const manifest = generated(published.name, ["--public"], examples.plain);
    published.ports = manifest.ports;
    assert.equal(manifest.public, true);
    assert.equal(manifest.database, undefined);
    assert.ok(!existsSync(join(copy, `services/${published.name}/migrations`)));
    assert.doesNotMatch(readCopy(`services/${published.name}/src/main.ts`), /database/i);
    assert.notDeepEqual(published.ports, withDb.ports);
  });

  test("running it again for the same name is refused and changes nothing", () => {
    const before = treeDigest();
    const r = generate(published.name);
    assert.equal(r.status, 2, tail(r));
    assert.match(r.stderr, new RegExp(`"${published.name}" is taken:[\\s\\S]*services/${published.name} already exists[\\s\\S]*Nothing was changed`));
    assert.equal(treeDigest(), before);
  });

  describe("the copy with both services passes", () => {
    // TAP by name: node 22 and later report in the spec format even to a pipe, and the checks below read TAP's summary.
    // The files run in the runner's own process (--test-isolation=none): one node and tsx start-up per run, not one more per file;
    // the end-to-end files need it (they share one platform, startServiceUnderTest).
    const node = (...args: string[]) => [process.execPath, ["--import", "tsx", "--test", "--test-reporter=tap", "--test-isolation=none", ...args]] as const;
    // One platform at a time, beside the static checks (which run one after
    // another): npm start's (it builds the copy, so the end-to-end tests find
    // the new services compiled too), then one for both end-to-end files.
    let started: Promise<NpmStartResult>;
    let e2e: Promise<Result>;
    const checks = new Map<string, Promise<Result>>();
    before(() => {
      started = npmStart(copy, [withDb.name, published.name], published.name);
      // One process for both files: they share one platform.
      const [cmd, args] = node("--test-timeout=120000", `test/e2e/${withDb.name}.test.ts`, `test/e2e/${published.name}.test.ts`);
      // npm start built the copy (its prestart), the new services too: the platform runs that build, as npm test's platforms run ours.
      e2e = started.then(() => runAsync(cmd, [...args], { PLATFORM_SERVICES_FROM: "build" }));
      // One after another, each with its own promise: a test waits for its checks only, not for the whole chain.
      const overlays = readdirSync(join(copy, "deploy/k8s/overlays"));
      // What the generator wrote or changed, with everything it imports (the whole program's check is npm test's).
      const typeChecked = "tsconfig.new-services.json";
      writeFileSync(join(copy, typeChecked), JSON.stringify({ extends: "./tsconfig.json", include: [], files: [...writtenTypeScript].sort() }));
      let previous: Promise<unknown> = Promise.resolve();
      for (const [title, [cmd, args]] of [
        ["buf lint", [bin("buf"), ["lint"]]],
        ["buf format", [bin("buf"), ["format", "--diff", "--exit-code"]]],
        ["tsc", [process.execPath, [join(copy, "node_modules/typescript-7/bin/tsc"), "--noEmit", "-p", typeChecked]]],
        ["unit", node(`services/${withDb.name}/src/${withDb.name}-service.spec.ts`, `services/${published.name}/src/${published.name}-service.spec.ts`)],
        ...overlays.map((o) => [`kustomize ${o}`, [kubectlPath(), ["kustomize", `deploy/k8s/overlays/${o}`]]] as const),
        ["kubernetes", node("test/kubernetes-manifests.test.ts")],
        ["repository", node("test/repository.test.ts")],
        ["observability", node("test/observability.test.ts")],
        ["audit", ["npm", ["run", "--silent", "audit"]]],
      ] as const) {
        const result = previous.then(() => runAsync(cmd, [...args]));
        checks.set(title, result);
        // The checks after it see the copy as the generator left it.
        previous = title === "tsc" ? result.then(() => rmSync(join(copy, typeChecked))) : result;
      }
    });
    const check = async (title: string) => {
      const r = await checks.get(title);
      assert.ok(r, `no check named ${title}`);
      return r;
    };
    const ok = (r: Result, what: string) => assert.equal(r.status, 0, `${what} failed in ${copy}:\n${tail(r)}`);

    test("buf lint and buf format", async () => {
      ok(await check("buf lint"), "buf lint");
      ok(await check("buf format"), "buf format");
    });

    test("the type check of every TypeScript file the generator wrote or changed, and what they import", async () => {
      for (const f of [`services/${withDb.name}/src/main.ts`, `test/e2e/${published.name}.test.ts`, "packages/proto/src/index.ts"])
        assert.ok(writtenTypeScript.has(f), `${f} is type-checked: ${[...writtenTypeScript].join(", ")}`);
      const r = await check("tsc");
      if (r.status === 0) return;
      // Work in progress elsewhere in the working tree may not type-check;
      // fail only on errors that the generated services brought.
      const theirs = spawnSync(process.execPath, ["node_modules/typescript-7/bin/tsc", "--noEmit", "-p", "tsconfig.json"], {
        cwd: origin,
        encoding: "utf8",
      }).stdout;
      const fresh = r.stdout.split("\n").filter((l) => /error TS/.test(l) && !theirs.includes(l));
      assert.deepEqual(fresh, [], tail(r));
    });

    test("the copied unit tests, the one with a database on a real PostgreSQL", async () => {
      const r = await check("unit");
      ok(r, "the unit tests");
      assert.match(r.stdout, /^# pass 7$/m, "4 with a database, 3 without");
    });

    test("the copied end-to-end tests: the platform with each service, called over gRPC", async () => {
      const r = await e2e;
      ok(r, "the end-to-end tests");
      assert.match(r.stdout, /^# fail 0$/m);
      assert.match(r.stdout, /^# skipped 0$/m);
      assert.match(r.stdout, /^# pass 12$/m, "4 + 4, and the 4 through the gateway");
    });

    test("npm start starts both with the platform, from their builds", async () => {
      const r = await started;
      assert.ok(r.ready, `npm start did not get ready:\n${r.out}`);
      for (const name of [withDb.name, published.name]) {
        const cmdline = r.cmdlines.get(name);
        assert.ok(cmdline !== undefined, `${name} started:\n${r.out}`);
        if (cmdline !== "") assert.match(cmdline, new RegExp(`services/${name}/dist/main\\.js`), `${name} runs from its build`);
      }
      assert.deepEqual(r.throughGateway, { status: 200, body: { message: "through the gateway" } });
      assert.equal(r.exitCode, 0, r.out.slice(-3000));
    });

    test("Kubernetes: every overlay renders with kubectl kustomize, and the manifest checks pass", async () => {
      const overlays = readdirSync(join(copy, "deploy/k8s/overlays"));
      assert.ok(overlays.length >= 2, overlays.join(", "));
      for (const o of overlays) {
        const r = await check(`kustomize ${o}`);
        ok(r, `kubectl kustomize deploy/k8s/overlays/${o}`);
        for (const name of [withDb.name, published.name])
          assert.match(r.stdout, new RegExp(`^kind: Deployment\\nmetadata:\\n(?: {2}.*\\n)*? {2}name: ${name}$`, "m"), `${o} deploys ${name}`);
      }
      ok(await check("kubernetes"), "test/kubernetes-manifests.test.ts");
    });

    test("compose: docker-compose config is valid and closed (the repository checks), and generated code is fresh", async () => {
      const r = await check("repository");
      ok(r, "test/repository.test.ts");
      const hasCompose = spawnSync("docker-compose", ["version"], { stdio: "ignore" }).status === 0;
      if (hasCompose) assert.match(r.stdout, /^# skipped 0$/m, "the compose check ran");
      if (hasCompose) {
        const config = run("docker-compose", ["-f", "docker-compose.yml", "config", "--services"], composeSecretsFor(copy));
        ok(config, "docker-compose config --services");
        for (const name of [withDb.name, published.name]) assert.match(config.stdout, new RegExp(`^${name}$`, "m"));
      }
    });

    test("the observability checks", async () => {
      ok(await check("observability"), "test/observability.test.ts");
    });

    test("the resilience audit passes with both services", async () => {
      ok(await check("audit"), "npm run audit");
    });
  });
});

/** Every `${NAME:?...}` compose requires, set to a test value (as test/repository.test.ts does). */
function composeSecretsFor(root: string): Record<string, string> {
  const text = readFileSync(join(root, "docker-compose.yml"), "utf8");
  return Object.fromEntries([...text.matchAll(/\$\{([A-Z0-9_]+):\?/g)].map((m) => [m[1]!, `test-only-${m[1]!.toLowerCase()}`]));
}

interface NpmStartResult {
  ready: boolean;
  /** Each named service's command line while it ran ("" where /proc is missing); absent: it did not start. */
  cmdlines: Map<string, string>;
  /** The public service's Echo through the gateway. */
  throughGateway?: { status: number; body: unknown };
  exitCode: number | null;
  out: string;
}

/**
 * `npm start` in `root` itself (it builds the copy, the new services
 * included, then runs it compiled): what it started, the public service
 * called through the gateway, and its exit status on SIGTERM. Facts only;
 * the test asserts them.
 */
async function npmStart(root: string, names: string[], publicName: string): Promise<NpmStartResult> {
  const dataDir = mkdtempSync(join(tmpdir(), "new-service-start-"));
  chmodSync(dataDir, 0o755); // the embedded database runs as an unprivileged user when we are root
  const child = spawn("npm", ["start"], {
    cwd: root,
    env: {
      ...childEnv(),
      DATA_DIR: dataDir,
      FREE_PORTS: "1",
      GATEWAY_PORT: String(await findFreePort("127.0.0.1")),
      EMBEDDED_POSTGRES_PORT: String(await findFreePort("127.0.0.1")),
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const result: NpmStartResult = { ready: false, cmdlines: new Map(), exitCode: null, out: "" };
  child.stdout.setEncoding("utf8").on("data", (d: string) => (result.out += d));
  child.stderr.setEncoding("utf8").on("data", (d: string) => (result.out += d));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  try {
    result.ready = await Promise.race([
      exited.then(() => false),
      (async () => {
        for (let i = 0; i < 1200 && !/ready in \d+ ms: gateway listening on/.test(result.out); i++) await new Promise((r) => setTimeout(r, 100));
        return /ready in \d+ ms/.test(result.out);
      })(),
    ]);
    if (!result.ready) return result;
    for (const name of names) {
      const pid = new RegExp(`^\\[platform\\] ${name} +ready on \\S+ \\(pid (\\d+)`, "m").exec(result.out)?.[1];
      if (pid !== undefined) result.cmdlines.set(name, existsSync("/proc/self/cmdline") ? readFileSync(`/proc/${pid}/cmdline`, "utf8") : "");
    }
    const gatewayUrl = /gateway listening on (http:\/\/\S+)/.exec(result.out)?.[1];
    const n = deriveNames(publicName);
    const res = await fetch(`${gatewayUrl}/${n.protoPackage}.${n.pascal}Service/Echo`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ message: "through the gateway" }),
    });
    result.throughGateway = { status: res.status, body: await res.json() };
    return result;
  } finally {
    child.kill("SIGTERM");
    result.exitCode = await exited;
    rmSync(dataDir, { recursive: true, force: true });
  }
}
