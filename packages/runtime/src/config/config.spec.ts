import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { ConfigError, readEnv } from "./config.js";
import { readServerConfig } from "./server-config.js";
import { readDependencyConfig } from "../client/dependency-config.js";

describe("configuration from the environment", () => {
  test("defaults when nothing is set", () => {
    const c = readEnv({}, (r) => readServerConfig(r, "stock", { port: 8083, adminPort: 9083 }));
    assert.equal(c.port, 8083);
    assert.equal(c.adminPort, 9083);
    assert.equal(c.deadline.edge, false);
    assert.equal("profile" in c, false, "no lab profile among a service's settings");
    assert.deepEqual(c.faultInjection, { enabled: false });
  });

  test("every bad variable is named in one error, and secrets are not echoed", () => {
    try {
      readEnv({ PORT: "http", DEADLINE_MAX_MS: "-5", LOG_LEVEL: "loud", FAULTS: '{"db":{"latencyMs":-1}}', DATABASE_URL: "mysql://u:secret@h/db" }, (r) => ({
        server: readServerConfig(r, "orders", { port: 8082, adminPort: 9082 }),
        db: r.postgresUrl("DATABASE_URL"),
        dep: readDependencyConfig(r, "stock", "http://x"),
        missing: r.string("SOMETHING_REQUIRED"),
      }));
      assert.fail("expected a ConfigError");
    } catch (e) {
      assert.ok(e instanceof ConfigError);
      const text = e.message;
      for (const name of ["PORT", "DEADLINE_MAX_MS", "LOG_LEVEL", "FAULTS", "DATABASE_URL", "SOMETHING_REQUIRED"]) assert.match(text, new RegExp(name));
      assert.doesNotMatch(text, /secret/);
      assert.equal(e.problems.length, 6);
    }
  });

  test("a dependency's bulkhead is read from its own variables", () => {
    const d = readEnv({ STOCK_URL: "http://stock:8083/", STOCK_MAX_CONCURRENT: "7" }, (r) => readDependencyConfig(r, "stock", "http://x"));
    assert.equal(d.baseUrl, "http://stock:8083");
    assert.equal(d.isolation.maxConcurrent, 7);
  });
});
