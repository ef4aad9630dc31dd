/**
 * The mailer (the receipts worker's dependency, a stand-in for an outside
 * mail provider) end to end: its own process in the platform, called over
 * gRPC the way the worker calls it, made slow or down by its handler faults.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { Code, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { healthV1, mailerV1 } from "@platform/proto";
import { expectCode, metricValue, setServiceFaults, startTestPlatform, type TestPlatform } from "@platform/test-support";

let p: TestPlatform;

before(async () => {
  p = await startTestPlatform({ faultInjection: true });
});
after(async () => {
  await p?.close();
});

const transport = () => createGrpcTransport({ baseUrl: p.services.mailer.url });
const client = () => createClient(mailerV1.MailerService, transport());

test("SendReceipt sends once per idempotency key; a repeat answers the first message", async () => {
  const first = await client().sendReceipt({ idempotencyKey: "e2e-key-1", orderId: "o-1" }, { timeoutMs: 2000 });
  const again = await client().sendReceipt({ idempotencyKey: "e2e-key-1", orderId: "o-1" }, { timeoutMs: 2000 });
  assert.deepEqual([first.duplicate, again.duplicate, again.messageId], [false, true, first.messageId]);
  const text = await p.metrics("mailer");
  assert.equal(metricValue(text, "mailer_receipts_total", { outcome: "duplicate" }), 1);
});

test("an empty key is INVALID_ARGUMENT, with a message", async () => {
  await expectCode(
    client().sendReceipt({ idempotencyKey: "", orderId: "o-1" }, { timeoutMs: 2000 }),
    Code.InvalidArgument,
    /^idempotency_key: must be at least 1 characters$/,
  );
});

test("down when the lab says so: handler faults answer UNAVAILABLE", async () => {
  await setServiceFaults(p, "mailer", { handler: { errorRate: 1, times: 1 } });
  await expectCode(client().sendReceipt({ idempotencyKey: "e2e-key-2", orderId: "o-2" }, { timeoutMs: 2000 }), Code.Unavailable, /injected fault/);
  const res = await client().sendReceipt({ idempotencyKey: "e2e-key-2", orderId: "o-2" }, { timeoutMs: 2000 });
  assert.equal(res.duplicate, false, "the failed call sent nothing");
});

test("it reports SERVING on grpc.health.v1, as Kubernetes probes it", async () => {
  const health = createClient(healthV1.Health, transport());
  const res = await health.check({ service: mailerV1.MailerService.typeName }, { timeoutMs: 2000 });
  assert.equal(res.status, healthV1.HealthCheckResponse_ServingStatus.SERVING);
});
