import assert from "node:assert/strict";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { after, afterEach, before, describe, it } from "node:test";
import { currentFaults, setFaults } from "@platform/resilience";
import { faultInjectionEndpoints } from "./admin-faults.js";
import { ConfigError, readEnv } from "../config/config.js";
import { readFaultInjectionConfig, type FaultInjectionConfig } from "./fault-injection.js";
import { dispatchEndpoint, type HttpEndpoint } from "../server/http-endpoints.js";
import { createLogger } from "../observability/logger.js";

const token = "0123456789abcdef-test-token";
const logger = createLogger("faults-spec", "silent");

/** A real operator port serving `endpoints`, as serve() does. */
let endpoints: Record<string, HttpEndpoint> = {};
let server: http.Server;
let base: string;
before(async () => {
  server = http.createServer((req, res) => {
    if (!dispatchEndpoint(endpoints, req, res)) res.writeHead(404).end("not found\n");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => new Promise<void>((resolve) => server.close(() => resolve())));
afterEach(() => setFaults({}));

function install(config: FaultInjectionConfig): void {
  endpoints = faultInjectionEndpoints(config, logger);
}

async function request(
  method: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<{ status: number; json: Record<string, unknown>; auth: string | null }> {
  const res = await fetch(`${base}/admin/faults`, { method, headers, ...(body === undefined ? {} : { body }) });
  return { status: res.status, json: (await res.json()) as Record<string, unknown>, auth: res.headers.get("www-authenticate") };
}

describe("fault injection, disabled (the default)", () => {
  it("reads as disabled from an empty environment", () => {
    assert.deepEqual(readEnv({}, readFaultInjectionConfig), { enabled: false });
  });

  it("answers every /admin/faults request 404 and never sets a fault", async () => {
    setFaults({ handler: { latencyMs: 5 } });
    install({ enabled: false });
    assert.deepEqual(currentFaults(), {}, "installing the disabled switch clears whatever was there");
    for (const method of ["GET", "PUT", "POST", "DELETE"]) {
      const r = await request(method, { authorization: `Bearer ${token}` }, method === "PUT" || method === "POST" ? '{"db":{"errorRate":1}}' : undefined);
      assert.equal(r.status, 404, method);
      assert.match(String(r.json["error"]), /disabled.*FAULT_INJECTION=enabled/);
    }
    assert.deepEqual(currentFaults(), {});
  });

  it("refuses FAULTS without the switch, naming both variables", () => {
    assert.throws(
      () => readEnv({ FAULTS: '{"db":{"errorRate":1}}' }, readFaultInjectionConfig),
      (e: unknown) => e instanceof ConfigError && /FAULTS is set but fault injection is disabled; set FAULT_INJECTION=enabled/.test(e.message),
    );
  });

  it("refuses a switch value it does not know", () => {
    assert.throws(() => readEnv({ FAULT_INJECTION: "yes" }, readFaultInjectionConfig), /FAULT_INJECTION must be one of disabled, enabled, got "yes"/);
  });
});

describe("fault injection, enabled", () => {
  it("needs a token of at least 16 characters", () => {
    assert.throws(() => readEnv({ FAULT_INJECTION: "enabled" }, readFaultInjectionConfig), /FAULT_INJECTION_TOKEN is required when FAULT_INJECTION=enabled/);
    assert.throws(() => readEnv({ FAULT_INJECTION: "enabled", FAULT_INJECTION_TOKEN: "short" }, readFaultInjectionConfig), /at least 16 characters, got 5/);
  });

  it("reads the token and the faults in force from start", () => {
    const c = readEnv({ FAULT_INJECTION: "enabled", FAULT_INJECTION_TOKEN: token, FAULTS: '{"handler":{"latencyMs":7}}' }, readFaultInjectionConfig);
    assert.deepEqual(c, { enabled: true, token, faults: { handler: { latencyMs: 7 } } });
    install(c);
    assert.deepEqual(currentFaults(), { handler: { latencyMs: 7 } });
  });

  it("names a bad FAULTS document", () => {
    assert.throws(
      () => readEnv({ FAULT_INJECTION: "enabled", FAULT_INJECTION_TOKEN: token, FAULTS: '{"db":{"latencyMs":-1}}' }, readFaultInjectionConfig),
      /FAULTS is not a valid faults document: db.latencyMs must be an integer/,
    );
  });

  it("answers 401 with a Bearer challenge without a token, 403 with a wrong one, and changes nothing", async () => {
    install({ enabled: true, token, faults: {} });
    for (const headers of [{}, { authorization: `Basic ${Buffer.from(`x:${token}`).toString("base64")}` }] as Record<string, string>[]) {
      const r = await request("PUT", headers, '{"db":{"errorRate":1}}');
      assert.equal(r.status, 401);
      assert.equal(r.auth, 'Bearer realm="admin/faults"');
    }
    for (const wrong of ["0123456789abcdef-test-tokeN", `${token}x`, "x"]) {
      const r = await request("PUT", { authorization: `Bearer ${wrong}` }, '{"db":{"errorRate":1}}');
      assert.equal(r.status, 403, wrong);
      assert.equal(r.json["error"], "wrong fault injection token");
    }
    assert.equal((await request("GET")).status, 401, "reading needs the token too");
    assert.equal((await request("DELETE", { authorization: "Bearer nope" })).status, 403);
    assert.deepEqual(currentFaults(), {});
  });

  it("sets, reads and clears faults with the token", async () => {
    install({ enabled: true, token, faults: {} });
    const auth = { authorization: `Bearer ${token}` };
    const put = await request("PUT", auth, '{"dependencies":{"orders":{"dropResponseRate":1,"times":1}}}');
    assert.equal(put.status, 200);
    assert.deepEqual(put.json, { dependencies: { orders: { dropResponseRate: 1, times: 1 } } });
    assert.deepEqual(currentFaults(), put.json);
    assert.deepEqual((await request("GET", { authorization: `bearer   ${token}` })).json, put.json, "the scheme is case-insensitive");
    const bad = await request("POST", auth, '{"db":{"errorRate":2}}');
    assert.equal(bad.status, 400);
    assert.match(String(bad.json["error"]), /db.errorRate must be a number from 0 to 1/);
    assert.deepEqual(currentFaults(), put.json, "a bad document changes nothing");
    const cleared = await request("DELETE", auth);
    assert.equal(cleared.status, 200);
    assert.deepEqual(currentFaults(), {});
  });
});
