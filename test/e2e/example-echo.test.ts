/**
 * example-echo end to end: the platform as `npm start` runs it, plus
 * example-echo as its own process (from its service.json), called over gRPC
 * the way another service calls it and, when its manifest says "public",
 * through the gateway the way a client calls it. Grow it with the service.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { Code, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { exampleEchoV1, healthV1 } from "@platform/proto";
import { expectCode, metricValue, transportFor, readServiceManifest, startServiceUnderTest, type ServiceUnderTest } from "@platform/test-support";

const manifest = readServiceManifest("example-echo");
let s: ServiceUnderTest;

before(async () => {
  s = await startServiceUnderTest(manifest.name);
});
after(async () => {
  await s?.platform.close();
});

const transport = () => createGrpcTransport({ baseUrl: s.service.url });
const client = () => createClient(exampleEchoV1.ExampleEchoService, transport());
const procedure = `/${exampleEchoV1.ExampleEchoService.typeName}/Echo`;
const metrics = async () => (await fetch(`${s.service.adminUrl}/metrics`)).text();

test("Echo answers over gRPC", async () => {
  const { message } = await client().echo({ message: "over grpc" }, { timeoutMs: 2000 });
  assert.equal(message, "over grpc");
});

test("an empty message is INVALID_ARGUMENT, with a message", async () => {
  await expectCode(client().echo({ message: "" }, { timeoutMs: 2000 }), Code.InvalidArgument, /^message: must be at least 1 characters$/);
});

test("it reports SERVING on grpc.health.v1, as Kubernetes probes it", async () => {
  const res = await createClient(healthV1.Health, transport()).check({ service: exampleEchoV1.ExampleEchoService.typeName }, { timeoutMs: 2000 });
  assert.equal(res.status, healthV1.HealthCheckResponse_ServingStatus.SERVING);
});

test("inherited from the runtime: a call without a deadline is counted and served; metrics on the admin port", async () => {
  const before = await metrics();
  await client().echo({ message: "no deadline" });
  const after = await metrics();
  const delta = (name: string, labels: Record<string, string>) => metricValue(after, name, labels) - metricValue(before, name, labels);
  assert.equal(delta("deadline_missing_total", { procedure }), 1, "an inner service counts a request without a deadline");
  assert.equal(delta("rpc_server_requests_total", { procedure, code: "ok" }), 1);
});

if (manifest.public) {
  describe("published by the gateway (service.json: public)", () => {
    const viaGateway = (protocol: Parameters<typeof transportFor>[1]) =>
      createClient(exampleEchoV1.ExampleEchoService, transportFor(s.platform.gatewayUrl, protocol));
    const curlEcho = (message: string) =>
      fetch(`${s.platform.gatewayUrl}${procedure}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ message }) });

    test("Connect JSON over HTTP/1.1, as curl sends it", async () => {
      const res = await curlEcho("via curl");
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), { message: "via curl" });
    });

    test("gRPC, gRPC-Web and Connect binary reach it through the gateway's one port", async () => {
      for (const protocol of ["grpc", "grpc-web", "connect-binary"] as const) {
        assert.equal((await viaGateway(protocol).echo({ message: protocol }, { timeoutMs: 2000 })).message, protocol);
      }
    });

    test("its errors reach the HTTP client with their code and message", async () => {
      const res = await curlEcho("");
      assert.equal(res.status, 400);
      const body = (await res.json()) as { code: string; message: string };
      assert.deepEqual([body.code, /must be at least 1 characters/.test(body.message)], ["invalid_argument", true]);
    });

    test("the gateway's deadline reaches it: no call through the gateway arrives without one", async () => {
      const before = await metrics();
      for (let i = 0; i < 3; i++) await viaGateway("connect-json").echo({ message: `deadline ${i}` });
      const after = await metrics();
      const delta = (name: string, labels: Record<string, string>) => metricValue(after, name, labels) - metricValue(before, name, labels);
      assert.equal(delta("rpc_server_requests_total", { procedure, code: "ok" }), 3, "three calls reached it");
      assert.equal(delta("deadline_missing_total", { procedure }), 0, "each arrived with the edge's deadline");
    });
  });
}
