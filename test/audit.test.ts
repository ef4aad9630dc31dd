/**
 * The resilience audit (docs/audit.md): every configuration the repository
 * ships passes (this is how CI runs it on each of them); the misconfigured
 * fixture fails with each of its problems named by variable and file; each
 * rule that could silently stop checking fails a copy broken for it; and
 * --live and --advise work against the real platform's processes; on a
 * fresh copy the audit installs the kubectl it needs itself.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { auditTarget, composeTarget, kubernetesTarget, repoRoot, shippedOverlays, type Problem } from "@platform/audit";
import { renderKustomization } from "@platform/k8s-check/render";
import { effectiveDependencies, envPrefix, forwardedApis, readServiceManifests } from "@platform/registry";
import { startTestPlatform, type TestPlatform } from "@platform/test-support";
import { copyRepository } from "./repository-copy.js";

/**
 * Runs the audit's command line with ARGS; resolves with its exit status and output. `viaNpm`: as a person
 * would, `npm run audit -- ARGS` (the first test, which also checks that the script is wired); otherwise the
 * script that npm runs, `node --import tsx scripts/audit.ts ARGS`, without npm's own start (a sixth of a
 * second of a core each time).
 */
function runAudit(
  args: string[],
  { viaNpm = false, cwd = repoRoot, env = process.env }: { viaNpm?: boolean; cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<{ status: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const [cmd, cmdArgs] = viaNpm ? ["npm", ["run", "--silent", "audit", "--", ...args]] : [process.execPath, ["--import", "tsx", "scripts/audit.ts", ...args]];
    const child = spawn(cmd, cmdArgs, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (c: string) => (out += c));
    child.stderr.setEncoding("utf8").on("data", (c: string) => (out += c));
    child.on("error", reject);
    child.on("close", (status) => resolve({ status, out }));
  });
}

const fixture = join(repoRoot, "test", "fixtures", "misconfigured", "docker-compose.yml");

/** The services whose apis the gateway forwards ("public": true in their manifests; checkout's api it serves itself), in its order. */
function forwardedServices() {
  return [...new Set(forwardedApis(readServiceManifests(repoRoot)).map((f) => f.service))];
}

/** The hops of the deployed services' manifests, as the audit prints them: `a -> b` per dependency, `a -> database` per database. */
function manifestCallGraph(): string[] {
  const manifests = readServiceManifests(repoRoot).filter((m) => m.deploy);
  return [
    ...manifests.flatMap((m) => effectiveDependencies(m, manifests).map((d) => `${m.name} -> ${d.service}`)),
    ...manifests.filter((m) => m.database).map((m) => `${m.name} -> database`),
  ];
}

async function problemsOf(composeFile: string): Promise<Problem[]> {
  const audit = await auditTarget(await composeTarget(composeFile));
  return audit.answers.flatMap((a) => a.problems);
}

function assertNamed(problems: Problem[], message: RegExp, where: RegExp): void {
  assert.ok(
    problems.some((p) => message.test(p.message) && where.test(p.where)),
    `expected a problem matching ${message} at ${where}; got:\n${problems.map((p) => `${p.message}\n  -> ${p.where}`).join("\n")}`,
  );
}

test("npm run audit passes the defaults, the compose file and every Kubernetes overlay, with the attempts multiplied out", async () => {
  const { status, out } = await runAudit([], { viaNpm: true });
  assert.equal(status, 0, out);
  const scripts = (JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts;
  assert.equal(scripts["audit"], "node --import tsx scripts/audit.ts", "what the other tests run without npm is what npm runs");
  assert.match(out, /^== defaults: PASS/m);
  assert.match(out, /^== compose docker-compose\.yml: PASS/m);
  const overlays = shippedOverlays();
  assert.ok(overlays.length >= 2);
  for (const dir of overlays) assert.match(out, new RegExp(`^== kubernetes ${dir.slice(repoRoot.length).replaceAll("/", "\\/")}: PASS`, "m"));
  assert.match(
    out,
    /PlaceOrder: 3 x 1 x 1 x 1 = 3 attempts at pricing's database \(gateway -> checkout -> orders -> pricing -> database\); budget-capped at 1\.1x under total failure/,
  );
  // The compose file's graph, read from each service's environment, is the manifests' (services added with npm run new-service included).
  const composeGraph = /^== compose docker-compose\.yml: .*\ncall graph: (.*)$/m.exec(out)?.[1]?.split(", ");
  assert.ok(composeGraph, out);
  assert.deepEqual(composeGraph.toSorted(), manifestCallGraph().toSorted());
  for (const hop of [
    "gateway -> checkout",
    "checkout -> orders",
    "checkout -> pricing",
    "orders -> pricing",
    "receipts -> mailer",
    "orders -> database",
    "pricing -> database",
    "receipts -> database",
  ])
    assert.ok(composeGraph.includes(hop), `the order path's hop ${hop}: ${composeGraph.join(", ")}`);
  assert.equal((out.match(/^pass {2}\d\. /gm) ?? []).length, 7 * (2 + overlays.length), "seven answers per configuration");
  assert.match(out, /rehearsed in CI: test\/e2e\/overload\.test\.ts cuts intake to 0 through PUT \/admin\/intake/);
  // Stream limits and lifetimes, per service, in every configuration.
  for (const service of ["gateway", "checkout", "orders"]) {
    assert.match(
      out,
      new RegExp(
        `^ +${service} streams: their own class, at most 2000 open \\(100 per caller\\), never queued \\(refused with pushback\\), each at most 600 s`,
        "m",
      ),
    );
  }
  assert.match(out, /gateway streams: .*, a heartbeat after 20 s idle$/m);
  assert.match(out, /^audit: PASS$/m);
});

test("right after npm ci, npm run audit installs the pinned kubectl it renders the overlays with", async (t) => {
  const copy = copyRepository(repoRoot, "audit-fresh-");
  t.after(() => rmSync(copy, { recursive: true, force: true }));
  const installed = join(copy, "tools", "kubectl", "bin", "kubectl");
  assert.equal(existsSync(installed), false, "a fresh copy has no kubectl (tools/kubectl/bin is ignored by git)");
  const env = { ...process.env };
  delete env["KUBECTL"];
  const { status, out } = await runAudit([], { viaNpm: true, cwd: copy, env });
  assert.equal(status, 0, out);
  assert.match(out, new RegExp(`^audit: installed ${installed.replaceAll("/", "\\/")} \\(v1\\.34\\.\\d+\\)$`, "m"));
  assert.ok(existsSync(installed), out);
  assert.match(out, /^audit: PASS$/m);
});

describe("the misconfigured copy", () => {
  const shown = /test\/fixtures\/misconfigured\/docker-compose\.yml: services\./;
  let problems: Problem[];
  before(async () => {
    problems = await problemsOf(fixture);
  });

  test("an inner hop that retries", () => {
    assertNamed(
      problems,
      /^inner hop orders -> pricing retries \(3 attempts per call\)/,
      new RegExp(`^PLATFORM_PLUGINS=lab/naive/plugin\\.ts \\(${shown.source}orders\\.environment\\)`),
    );
  });
  test("timeouts growing inward", () => {
    assertNamed(
      problems,
      /^pricing's maximum deadline \(60000 ms\) is longer than its caller orders' \(30000 ms\): timeouts grow inward/,
      new RegExp(`^DEADLINE_MAX_MS=60000 \\(${shown.source}pricing\\.environment\\)`),
    );
    assertNamed(
      problems,
      /^pricing's default deadline \(10000 ms\) is longer than its caller/,
      new RegExp(`^DEADLINE_DEFAULT_MS=10000 \\(${shown.source}pricing`),
    );
  });
  test("an unbounded queue", () => {
    assertNamed(
      problems,
      /^checkout's admission queue \(1000000\) is effectively unbounded/,
      new RegExp(`^ADMISSION_MAX_QUEUE=1000000 \\(${shown.source}checkout`),
    );
  });
  test("a breaker missing on one dependency", () => {
    assertNamed(
      problems,
      /^orders -> pricing has no bulkhead and no circuit breaker/,
      new RegExp(`^PLATFORM_PLUGINS=lab/naive/plugin\\.ts \\(${shown.source}orders`),
    );
  });
  test("a retried write without a key", () => {
    assertNamed(
      problems,
      /^retried write without a key: gateway -> checkout repeats checkout\.v1\.CheckoutService\/PlaceOrder up to 3 times/,
      new RegExp(`^PLATFORM_PLUGINS=lab/naive/plugin\\.ts \\(${shown.source}gateway`),
    );
  });
  test("the CLI exits non-zero and prints every problem with where to fix it", async () => {
    const { status, out } = await runAudit(["--compose", fixture]);
    assert.equal(status, 1, out);
    for (const p of problems) assert.ok(out.includes(p.message) && out.includes(`-> ${p.where}`), `not printed: ${p.message}`);
    assert.match(out, /PlaceOrder: 3 x 1 x 3 x 1 = 9 attempts at pricing's database/);
    assert.match(out, /^audit: FAIL/m);
  });
});

describe("each rule fails a copy broken for it", () => {
  const dir = mkdtempSync(join(tmpdir(), "audit-"));
  after(() => rmSync(dir, { recursive: true, force: true }));
  /**
   * The shipped compose file's four services with `extra` added to one
   * service's environment; with every service the gateway publishes (its
   * config calls each by default, a service added with `npm run new-service
   * -- NAME --public` among them), so that the unbroken copy reaches all it calls.
   */
  function composeWith(service: string, extra: Record<string, string>): string {
    const env: Record<string, Record<string, string>> = {
      pricing: { SERVICE: "pricing", PORT: "8083", DATABASE_URL: "postgres://pricing:${PW}@postgres:5432/platform" },
      orders: { SERVICE: "orders", PORT: "8082", DATABASE_URL: "postgres://orders:${PW}@postgres:5432/platform", PRICING_URL: "http://pricing:8083" },
      checkout: { SERVICE: "checkout", PORT: "8081", ORDERS_URL: "http://orders:8082", PRICING_URL: "http://pricing:8083" },
      gateway: { SERVICE: "gateway", PORT: "8080", CHECKOUT_URL: "http://checkout:8081" },
    };
    for (const m of forwardedServices()) {
      env[m.name] = { SERVICE: m.name, PORT: String(m.ports.rpc) };
      if (m.database) env[m.name]!["DATABASE_URL"] = `postgres://${m.database.role}:\${PW}@postgres:5432/platform`;
      env["gateway"]![`${envPrefix(m.name)}_URL`] = `http://${m.name}:${m.ports.rpc}`;
    }
    Object.assign(env[service]!, extra);
    const file = join(dir, `${service}-${Object.keys(extra).join("-")}.yml`);
    writeFileSync(file, JSON.stringify({ services: Object.fromEntries(Object.entries(env).map(([k, v]) => [k, { environment: v }])) }));
    return file;
  }

  test("the unbroken copy passes", async () => {
    assert.deepEqual(await problemsOf(composeWith("gateway", {})), []);
  });
  test("a bulkhead queue longer than the callee admits", async () => {
    assertNamed(
      await problemsOf(composeWith("checkout", { ORDERS_MAX_QUEUE: "100000" })),
      /^checkout -> orders: 48 slots \+ 100000 queued per method is more than orders admits/,
      /^ORDERS_MAX_QUEUE=100000 /,
    );
  });
  test("a retry budget too large to cap a total failure", async () => {
    assertNamed(
      await problemsOf(composeWith("gateway", { RETRY_BUDGET_PERCENT: "0.5" })),
      /retry budget lets 50 % of requests be retried/,
      /^RETRY_BUDGET_PERCENT=0\.5 /,
    );
  });
  test("no layer retries", async () => {
    assertNamed(await problemsOf(composeWith("gateway", { RETRY_MAX_ATTEMPTS: "1" })), /^no layer retries/, /^RETRY_MAX_ATTEMPTS=1 /);
  });
  test("intake control off at the edge", async () => {
    assertNamed(await problemsOf(composeWith("gateway", { INTAKE_ENABLED: "false" })), /no intake controller guards the edge/, /^INTAKE_ENABLED=false /);
  });
  test("a dependency URL that reaches no service", async () => {
    assertNamed(
      await problemsOf(composeWith("checkout", { ORDERS_URL: "http://ordres:8082" })),
      /^checkout -> orders: http:\/\/ordres:8082 reaches no service/,
      /^ORDERS_URL=http:\/\/ordres:8082 /,
    );
  });
  test("a configuration the service would refuse", async () => {
    assertNamed(
      await problemsOf(composeWith("orders", { DB_POOL_MAX: "lots" })),
      /^orders would refuse to start: DB_POOL_MAX must be an integer/,
      /services\.orders$/,
    );
  });
});

describe("against running services", () => {
  const apiKey = "audit-test-key-0123456789";
  let p: TestPlatform;
  let adminUrls: string[];
  before(async () => {
    p = await startTestPlatform({ undeployed: true, serviceEnv: { gateway: { AUTH_API_KEYS: `alice=${apiKey}` } } });
    adminUrls = Object.values(p.services).map((s) => s.adminUrl);
  });
  after(() => p?.close());

  test("GET /admin/config shows the effective configuration and wiring, never a secret", async () => {
    const res = await fetch(`${p.services.gateway.adminUrl}/admin/config`);
    assert.equal(res.status, 200);
    const text = await res.text();
    assert.ok(!text.includes(apiKey), "the API key must not be shown");
    const body = JSON.parse(text) as {
      service: string;
      config: { edge: { auth: { keys: string } } };
      dependencyClients: { dependency: string; retry: unknown }[];
    };
    assert.equal(body.service, "gateway");
    assert.equal(body.config.edge.auth.keys, "[redacted]");
    // checkout, then each service the gateway forwards an api to.
    assert.deepEqual(
      body.dependencyClients.map((c) => c.dependency),
      ["checkout", ...forwardedServices().map((m) => m.name)],
    );
    const orders = (await (await fetch(`${p.services.orders.adminUrl}/admin/config`)).json()) as { dependencyClients: { retry: unknown }[] };
    assert.deepEqual(
      orders.dependencyClients.map((c) => c.retry),
      ["none"],
      "orders' main wires its pricing client without retries",
    );
    assert.equal((await fetch(`${p.gatewayUrl}/admin/config`)).status, 404, "not on the public port");
  });

  test("npm run audit -- --live passes the running platform, from what each process wired", async () => {
    const { status, out } = await runAudit(["--live", ...adminUrls]);
    assert.equal(status, 0, out);
    assert.match(out, /^== live: PASS/m);
    assert.match(out, /retrying layers: gateway; every other hop attempts each call once \(as each process wired its dependency clients\)/);
    assert.match(out, /PlaceOrder: 3 x 1 x 1 x 1 = 3 attempts at pricing's database/);
  });

  test("--live fails while the edge's intake is held by hand, and says how to return it to automatic", async () => {
    const intake = `${p.services.gateway.adminUrl}/admin/intake`;
    assert.equal((await fetch(intake, { method: "PUT", body: '{"fraction": 0.5}' })).status, 200);
    try {
      const { status, out } = await runAudit(["--live", ...adminUrls]);
      assert.equal(status, 1, out);
      assert.match(out, /gateway now: manual, admitting 50 % of new requests/);
      assert.ok(out.includes(`gateway's intake is held by hand at 50 %`) && out.includes(`-> PUT ${intake} {"fraction": null}`), out);
    } finally {
      await fetch(intake, { method: "PUT", body: '{"fraction": null}' });
    }
  });

  test("npm run audit -- --advise under a generated load proposes settings from the measured latency", async () => {
    const { status, out } = await runAudit(["--advise", "--load", "20", "--seconds", "5", ...adminUrls]);
    assert.equal(status, 0, out);
    assert.match(out, /^sent \d+, succeeded \d+/m);
    assert.match(out, /^ {4}PlaceOrder: \d+ calls \([\d.]+\/s\), mean [\d.]+ ms, p50 [\d.]+ ms, p99\.9 [\d.]+ ms$/m);
    for (const v of ["CHECKOUT_MAX_CONCURRENT", "CHECKOUT_MAX_QUEUE", "ORDERS_MAX_CONCURRENT", "PRICING_MAX_QUEUE"])
      assert.match(out, new RegExp(`^ {4}${v}=\\d+: current \\d+, (tighter|looser|within)`, "m"));
    assert.match(out, /^ {4}DEADLINE_DEFAULT_MS=\d+: current 3000, /m);
    assert.match(
      out,
      /^orders -> database\n {4}DB_POOL_MAX=\d+: current 10, .*\n {4}note: connections in use, sampled each second: mean [\d.]+, peak \d+ of 10/m,
    );
    assert.match(out, /^ {4}gateway: CHECKOUT_MAX_CONCURRENT=\d+ CHECKOUT_MAX_QUEUE=\d+ DEADLINE_DEFAULT_MS=\d+ RETRY_BUDGET_PERCENT=[\d.]+$/m);
  });

  test("bad usage is refused with a clear message", async () => {
    const { status, out } = await runAudit(["--live"]);
    assert.equal(status, 2);
    assert.match(out, /--live and --advise need the operator URL of each service/);
    const urlsAlone = await runAudit(adminUrls);
    assert.equal(urlsAlone.status, 2);
    assert.match(urlsAlone.out, /operator URLs need --live or --advise/);
    const wrong = await runAudit(["--live", p.gatewayUrl]);
    assert.equal(wrong.status, 2);
    assert.match(wrong.out, /is this a service's operator port/);
  });
});

test("on Kubernetes, a dependency URL naming a ClusterIP Service (balanced per connection) is a problem; the shipped headless ones pass", async () => {
  const base = join(repoRoot, "deploy", "k8s", "base");
  const checkout = renderKustomization(base).find((o) => o.kind === "Deployment" && o.metadata.name === "checkout")!;
  const env = (checkout["spec"] as { template: { spec: { containers: { env: { name: string }[] }[] } } }).template.spec.containers[0]!.env;
  const at = env.findIndex((e) => e.name === "ORDERS_URL");
  const overlay = mkdtempSync(join(tmpdir(), "audit-clusterip-"));
  try {
    writeFileSync(
      join(overlay, "kustomization.yaml"),
      [
        "apiVersion: kustomize.config.k8s.io/v1beta1",
        "kind: Kustomization",
        "resources:",
        `  - ${relative(overlay, base)}`,
        "patches:",
        "  - target:",
        "      kind: Deployment",
        "      name: checkout",
        "    patch: |-",
        "      - op: replace",
        `        path: /spec/template/spec/containers/0/env/${at}/value`,
        "        value: http://orders:8082",
        "",
      ].join("\n"),
    );
    const problems = (await auditTarget(await kubernetesTarget(overlay))).answers.flatMap((a) => a.problems);
    assertNamed(problems, /^checkout -> orders: http:\/\/orders:8082 resolves to a ClusterIP Service/, /ORDERS_URL=http:\/\/orders:8082 /);
    assert.deepEqual(
      problems.filter((p) => /ClusterIP/.test(p.message)).map((p) => p.message.split(":")[0]),
      ["checkout -> orders"],
      "the other dependencies name headless Services",
    );
  } finally {
    rmSync(overlay, { recursive: true, force: true });
  }
});
