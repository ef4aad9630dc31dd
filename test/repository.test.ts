/** Checks of the repository itself: generated code is fresh, the compose file is valid and closed. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";

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

const composeSecrets = { POSTGRES_PASSWORD: "test-only", ORDERS_DB_PASSWORD: "test-only-orders", PRICING_DB_PASSWORD: "test-only-pricing" };

test("docker-compose.yml is valid, and only the gateway is published", (t) => {
  const hasCompose = spawnSync("docker-compose", ["version"], { stdio: "ignore" }).status === 0;
  if (!hasCompose) {
    // CI installs it (.ci/run); on a developer machine without it, say so loudly.
    if (process.env["CI"]) assert.fail("docker-compose is not installed");
    t.skip("docker-compose not installed (apt-get install docker-compose)");
    return;
  }
  const out = execFileSync("docker-compose", ["-f", "docker-compose.yml", "config"], {
    env: { ...process.env, ...composeSecrets },
    encoding: "utf8",
  });
  // Without the secret, compose refuses to render: no default password lives in the repository.
  const missing = spawnSync("docker-compose", ["-f", "docker-compose.yml", "config", "-q"], { env: { ...process.env, ...composeSecrets, POSTGRES_PASSWORD: "" }, encoding: "utf8" });
  assert.notEqual(missing.status, 0);
  assert.match(missing.stderr, /POSTGRES_PASSWORD/);

  const published = [...out.matchAll(/^  (\w+):\n(?:    .*\n)*?    ports:\n((?:    - .*\n|      .*\n)+)/gm)].map((m) => ({ name: m[1], ports: m[2] ?? "" }));
  // The one exception: Grafana, in the opt-in observability profile only, on loopback only (docs/observability.md).
  assert.deepEqual(published.map((p) => p.name).filter((n) => n !== "grafana"), ["gateway"], "only the gateway publishes a port");
  const grafana = published.find((p) => p.name === "grafana");
  if (grafana) {
    assert.equal(grafana.ports.trim(), "- 127.0.0.1:3000:3000/tcp", "Grafana publishes 3000 on loopback only");
    assert.match(/^  grafana:\n((?:    .*\n|      .*\n)+)/m.exec(out)?.[1] ?? "", /^    profiles:\n    - observability\n/m, "Grafana runs only in the observability profile");
  }
  for (const svc of ["checkout", "orders", "pricing", "postgres"]) {
    const block = new RegExp(`^  ${svc}:\\n((?:    .*\\n|      .*\\n)+)`, "m").exec(out)?.[1] ?? "";
    assert.doesNotMatch(block, /^    ports:/m, `${svc} must not publish ports`);
    assert.match(block, /internal/, `${svc} is on the internal network`);
  }
  assert.match(out, /internal:\n\s+internal: true/, "the internal network has no route out");
});
