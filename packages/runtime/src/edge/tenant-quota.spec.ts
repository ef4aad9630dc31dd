/**
 * Per-tenant quotas on a fake clock: a tenant over its quota is refused
 * with pushback while another is served; overrides; the refusal's form;
 * metrics bounded to the busiest tenants plus "other".
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import { QuotaFailureSchema, refusalReason, retryInfoDelayMs } from "@platform/proto/error-details";
import { EnvReader } from "../config/config.js";
import { register } from "../observability/metrics.js";
import { quotaExceeded, readTenantQuotaConfig, TenantQuotas } from "./tenant-quota.js";
import { otherTenants, TenantMetrics } from "./tenant-metrics.js";

describe("tenant quotas", () => {
  test("a tenant over its quota waits; another tenant is served; an override has its own size", () => {
    let now = 0;
    const quotas = new TenantQuotas(
      { defaults: { perSecond: 2, burst: 2 }, overrides: new Map([["big", { perSecond: 100, burst: 10 }]]), metricsTopN: 5 },
      () => now,
    );
    assert.deepEqual([quotas.take("acme"), quotas.take("acme")], [0, 0]);
    assert.equal(quotas.take("acme"), 500, "one token comes back in 1/2 s");
    assert.equal(quotas.take("globex"), 0, "another tenant's bucket is full");
    assert.equal(Array.from({ length: 10 }, () => quotas.take("big")).filter((w) => w === 0).length, 10);
    assert.ok(quotas.take("big") > 0);
    now += 500;
    assert.equal(quotas.take("acme"), 0);
    assert.deepEqual(quotas.quotaOf("big"), { perSecond: 100, burst: 10 });
    assert.deepEqual(quotas.quotaOf("anyone"), { perSecond: 2, burst: 2 });
  });

  test("the refusal: resource_exhausted naming the tenant's quota, with the platform's pushback headers and QUOTA_EXCEEDED details", () => {
    const e = quotaExceeded("acme", { perSecond: 2, burst: 4 }, 1500);
    assert.equal(e.code, Code.ResourceExhausted);
    assert.match(e.rawMessage, /quota exceeded for tenant "acme": 2 requests per second \(burst 4\)/);
    assert.equal(e.metadata.get("grpc-retry-pushback-ms"), "1500");
    assert.equal(e.metadata.get("retry-after"), "2");
    assert.equal(refusalReason(e), "QUOTA_EXCEEDED");
    assert.equal(retryInfoDelayMs(e), 1500);
    assert.deepEqual(
      e.findDetails(QuotaFailureSchema).flatMap((q) => q.violations.map((v) => [v.subject, v.description])),
      [["tenant:acme", "2 requests per second (burst 4)"]],
    );
  });

  test("config: defaults, overrides, and a clear error for a bad entry", () => {
    const r = new EnvReader({ TENANT_QUOTA_PER_SEC: "5", TENANT_QUOTA_OVERRIDES: "acme=200:400, trial=0.5" });
    const c = readTenantQuotaConfig(r);
    assert.deepEqual(r.problems, []);
    assert.deepEqual(c.defaults, { perSecond: 5, burst: 5 });
    assert.deepEqual(
      [...c.overrides],
      [
        ["acme", { perSecond: 200, burst: 400 }],
        ["trial", { perSecond: 0.5, burst: 1 }],
      ],
    );
    const bad = new EnvReader({ TENANT_QUOTA_OVERRIDES: "acme=lots" });
    readTenantQuotaConfig(bad);
    assert.match(bad.problems.join(), /"acme=lots" is not tenant=perSecond\[:burst\]/);
  });
});

describe("tenant metrics", () => {
  const series = async () =>
    Object.fromEntries(
      (await register.getSingleMetric("edge_tenant_requests_total")!.get()).values
        .filter((v) => v.labels["outcome"] === "admitted")
        .map((v) => [String(v.labels["tenant"]), v.value]),
    );

  test("at most N tenants have a series, the busiest first; the rest are other; a series never moves", async () => {
    register.getSingleMetric("edge_tenant_requests_total")?.reset();
    const m = new TenantMetrics(2, ["vip"]);
    for (let i = 0; i < 5; i++) m.count("busy", "admitted");
    m.count("quiet", "admitted");
    m.count("vip", "admitted");
    // Counted as "other" until a scrape names them: one free series, for the busiest.
    assert.deepEqual(await series(), { vip: 1, [otherTenants]: 6 });
    m.count("busy", "admitted");
    m.count("quiet", "admitted");
    for (let i = 0; i < 100; i++) m.count(`t${i}`, "admitted");
    assert.deepEqual(await series(), { vip: 1, busy: 1, [otherTenants]: 107 });
  });
});
