import { test } from "node:test";
import assert from "node:assert/strict";
import { readEnv } from "./config.js";
import { readAuthConfig } from "../edge/edge-auth.js";
import { effectiveConfig } from "./effective-config.js";
import { redactConfig } from "./redact.js";

const password = "s3cret-Pa55word";
const apiKey = "k-0123456789abcdef-secret";

test("the effective configuration never shows a password, an API key or a DATABASE_URL's credentials", () => {
  const config = readEnv(
    {
      DATABASE_URL: `postgres://orders:${password}@db.internal:5432/platform`,
      AUTH_MODE: "api-key",
      AUTH_API_KEYS: `alice=${apiKey}`,
    },
    (r) => ({ databaseUrl: r.postgresUrl("DATABASE_URL"), auth: readAuthConfig(r), nested: { dbPassword: "hunter2-hunter2", plain: 5 } }),
  );
  const text = JSON.stringify(effectiveConfig("orders"));
  for (const secret of [password, apiKey, "hunter2-hunter2"]) assert.ok(!text.includes(secret), `${secret} leaked: ${text}`);
  const shown = effectiveConfig("orders").config as { databaseUrl: string; auth: { mode: string; keys: string }; nested: { plain: number } };
  assert.equal(shown.databaseUrl, "postgres://orders:redacted@db.internal:5432/platform", "user, host and database stay readable");
  assert.equal(shown.auth.mode, "api-key");
  assert.equal(shown.auth.keys, "[redacted]");
  assert.equal(shown.nested.plain, 5);
  assert.ok(config.databaseUrl.includes(password), "the service itself still gets the real value");
});

test("redaction keeps the shape: maps become objects, cycles and functions are dropped, unparseable URLs lose their user info", () => {
  const cyclic: Record<string, unknown> = { a: 1, f: () => 1 };
  cyclic["self"] = cyclic;
  assert.deepEqual(redactConfig({ m: new Map([["x", 1]]), c: cyclic, n: 10n }), { m: { x: 1 }, c: { a: 1 }, n: "10" });
  assert.equal(redactConfig("postgres://u:p@[bad"), "postgres://[redacted]@[bad");
  assert.equal(redactConfig("http://stock:8083"), "http://stock:8083");
});
