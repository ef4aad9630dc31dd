/**
 * observability/ cannot drift from the code: every metric the dashboard
 * queries is one the code base exports, Prometheus scrapes every service
 * compose runs, Grafana's provisioning points at the dashboard and its
 * datasource, and docs/observability.md documents every platform metric.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { parse } from "yaml";

const root = process.cwd();
const dashboardDir = "observability/grafana/dashboards";

function sourceFiles(dir: string, suffix: string): string[] {
  if (!existsSync(join(root, dir))) return [];
  return readdirSync(join(root, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith(suffix) && !e.parentPath.includes("node_modules") && !e.parentPath.includes("/gen"))
    .map((e) => relative(root, join(e.parentPath, e.name)));
}

/** Metric names defined by our code: `name: "x"` in a metric definition, or serviceCounter("x", ...). */
function ourMetrics(): Map<string, string> {
  const out = new Map<string, string>();
  const files = [...sourceFiles("packages", ".ts"), ...sourceFiles("services", ".ts")].filter((f) => !f.endsWith(".spec.ts") && !f.includes("/testing/"));
  for (const f of files) {
    const text = readFileSync(join(root, f), "utf8");
    if (!/from "prom-client"|serviceCounter\(/.test(text)) continue;
    for (const m of text.matchAll(/(?:\bname: |serviceCounter\(\s*)"([a-z_:][a-z0-9_:]*)"/g)) out.set(m[1]!, f);
  }
  return out;
}

/** The default process metrics prom-client exports (collectDefaultMetrics), from its own source. */
function defaultMetrics(): Set<string> {
  const dir = join(root, "node_modules/prom-client/lib/metrics");
  const out = new Set<string>();
  for (const f of readdirSync(dir).filter((x) => x.endsWith(".js"))) {
    for (const m of readFileSync(join(dir, f), "utf8").matchAll(/'((?:process|nodejs)_[a-z0-9_]+)'/g)) out.add(m[1]!);
  }
  return out;
}

const promqlWords = new Set([
  ...["sum", "min", "max", "avg", "count", "stddev", "stdvar", "topk", "bottomk", "quantile", "count_values", "group"],
  ...["by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset", "inf", "nan"],
]);

/** The metric names a PromQL expression selects (functions, keywords, labels and strings removed). */
function metricNamesIn(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, " ")
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, " ")
    .replace(/\[[^\]]*\]/g, " ")
    .replace(/\b\d+(?:\.\d+)?(?:e[+-]?\d+)?\b/gi, " ");
  const names = new Set<string>();
  for (const m of stripped.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const word = m[0];
    const after = stripped.slice((m.index ?? 0) + word.length);
    if (promqlWords.has(word.toLowerCase()) || /^\s*\(/.test(after)) continue;
    names.add(word);
  }
  return [...names];
}

interface Panel {
  title?: string;
  type?: string;
  datasource?: { uid?: string };
  targets?: { expr?: string; datasource?: { uid?: string } }[];
  panels?: Panel[];
}

function dashboards(): [string, { uid?: string; title?: string; panels?: Panel[] }][] {
  return readdirSync(join(root, dashboardDir))
    .filter((f) => f.endsWith(".json"))
    .map((f) => [f, JSON.parse(readFileSync(join(root, dashboardDir, f), "utf8")) as { panels?: Panel[] }]);
}

function allPanels(panels: Panel[] = []): Panel[] {
  return panels.flatMap((p) => [p, ...allPanels(p.panels)]);
}

test("metricNamesIn finds metric names and nothing else", () => {
  assert.deepEqual(
    metricNamesIn(
      'sum(rate(retry_retries_total[1m])) / sum by (dependency) (rate(rpc_client_calls_total{dependency="checkout", code!~"ok|x_total"}[1m]))',
    ).sort(),
    ["retry_retries_total", "rpc_client_calls_total"],
  );
  assert.deepEqual(metricNamesIn("histogram_quantile(0.99, sum by (le) (rate(db_pool_wait_seconds_bucket[5m]))) > 1e-3"), ["db_pool_wait_seconds_bucket"]);
  assert.deepEqual(metricNamesIn("max by (service) (circuit_breaker_state) == bool 2"), ["circuit_breaker_state"]);
});

test("every metric the dashboards query exists in the code base", () => {
  const ours = ourMetrics();
  const defaults = defaultMetrics();
  assert.ok(ours.has("rpc_server_requests_total") && ours.has("db_pool_connections"), "the metric definitions were found");
  assert.ok(defaults.has("process_cpu_seconds_total"), "prom-client's default metrics were found");
  const known = (name: string) => ours.has(name) || defaults.has(name) || ours.has(name.replace(/_(bucket|sum|count)$/, ""));
  const unknown: string[] = [];
  let queries = 0;
  for (const [file, d] of dashboards()) {
    for (const p of allPanels(d.panels)) {
      for (const t of p.targets ?? []) {
        queries++;
        for (const name of metricNamesIn(t.expr ?? "")) if (!known(name)) unknown.push(`${file} "${p.title}": ${name}`);
      }
    }
  }
  assert.ok(queries >= 20, `only ${queries} queries found`);
  assert.deepEqual(unknown, [], "a dashboard queries a metric no code exports (renamed or removed?)");
});

test("the dashboards show the leading indicators", () => {
  const exprs = dashboards()
    .flatMap(([, d]) => allPanels(d.panels))
    .flatMap((p) => p.targets ?? [])
    .map((t) => t.expr ?? "");
  const has = (re: RegExp) => exprs.some((e) => re.test(e));
  assert.ok(
    has(/^sum\(rate\(retry_retries_total\[1m\]\)\) \/ sum\(rate\(rpc_client_calls_total\{service="gateway"\}\[1m\]\)\)$/),
    "retry ratio, over every dependency of the gateway",
  );
  for (const [what, re] of [
    ["budget exhausted", /retry_refused_total\{reason="budget_exhausted"\}/],
    ["requests without deadline", /deadline_missing_total/],
    ["work past deadline", /deadline_work_after_deadline_total/],
    ["pool utilisation", /db_pool_connections/],
    ["pool wait", /db_pool_wait_seconds_bucket/],
    ["breaker states", /circuit_breaker_state/],
    ["shed requests", /admission_shed_total/],
    ["intake", /intake_admit_fraction/],
    ["goodput at the gateway", /rpc_server_requests_total\{service="gateway", code="ok"/],
    ["latency histograms", /rpc_server_duration_seconds_bucket/],
  ] as const) {
    assert.ok(has(re), what);
  }
});

test("Grafana provisioning: the datasource the dashboards use, and the folder compose mounts", () => {
  const ds = parse(readFileSync(join(root, "observability/grafana/provisioning/datasources/prometheus.yml"), "utf8")) as {
    datasources: { uid: string; url: string }[];
  };
  const uids = new Set(ds.datasources.map((d) => d.uid));
  for (const [file, d] of dashboards()) {
    for (const p of allPanels(d.panels)) {
      for (const ref of [p.datasource, ...(p.targets ?? []).map((t) => t.datasource)]) {
        if (ref?.uid !== undefined) assert.ok(uids.has(ref.uid), `${file} "${p.title}" uses datasource ${ref.uid}, which is not provisioned`);
      }
    }
  }
  const providers = parse(readFileSync(join(root, "observability/grafana/provisioning/dashboards/platform.yml"), "utf8")) as {
    providers: { options: { path: string } }[];
  };
  const compose = readFileSync(join(root, "docker-compose.yml"), "utf8");
  for (const p of providers.providers)
    assert.ok(compose.includes(`./${dashboardDir}:${p.options.path}:ro`), `compose mounts ${dashboardDir} at ${p.options.path}`);
  assert.ok(compose.includes("./observability/prometheus.yml:/etc/prometheus/prometheus.yml:ro"));
  assert.ok(ds.datasources.every((d) => d.url === "http://prometheus:9090"));
});

test("Prometheus scrapes the admin port of every service compose runs, labelled with its name", () => {
  const compose = parse(readFileSync(join(root, "docker-compose.yml"), "utf8"), { merge: true }) as {
    services: Record<string, { environment?: Record<string, string> }>;
  };
  const expected = Object.entries(compose.services)
    .filter(([, s]) => s.environment?.["ADMIN_PORT"] !== undefined)
    .map(([name, s]) => `${name}:${s.environment?.["ADMIN_PORT"]} service=${name}`)
    .sort();
  assert.ok(expected.length >= 4, expected.join(", "));
  const prom = parse(readFileSync(join(root, "observability/prometheus.yml"), "utf8")) as {
    scrape_configs: { job_name: string; metrics_path?: string; static_configs: { targets: string[]; labels?: { service?: string } }[] }[];
  };
  const scraped = prom.scrape_configs
    .flatMap((j) => j.static_configs)
    .flatMap((c) => c.targets.map((t) => `${t} service=${c.labels?.service}`))
    .sort();
  assert.deepEqual(scraped, expected);
});

test("docs/observability.md documents every metric the platform packages and services export", () => {
  const doc = readFileSync(join(root, "docs/observability.md"), "utf8");
  const missing = [...ourMetrics()].filter(([name]) => !doc.includes(`\`${name}\``)).map(([name, file]) => `${name} (${file})`);
  assert.deepEqual(missing, [], "add these to the metrics reference in docs/observability.md");
});
