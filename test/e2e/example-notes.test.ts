/**
 * example-notes end to end: the platform as `npm start` runs it, plus
 * example-notes as its own process (from its service.json) on its own role
 * and schema in the platform's PostgreSQL, called over gRPC the way another
 * service calls it and, when its manifest says "public", through the
 * gateway the way a client calls it. Grow it with the service.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { Code, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { exampleNotesV1, healthV1 } from "@platform/proto";
import { expectCode, metricValue, transportFor, readServiceManifest, startServiceUnderTest, type ServiceUnderTest } from "@platform/test-support";

const manifest = readServiceManifest("example-notes");
const schema = manifest.database?.schema ?? assert.fail("example-notes has a database in its service.json");
let s: ServiceUnderTest;

before(async () => {
  s = await startServiceUnderTest(manifest.name);
});
after(async () => {
  await s?.platform.close();
});

const transport = () => createGrpcTransport({ baseUrl: s.service.url });
const client = () => createClient(exampleNotesV1.ExampleNotesService, transport());
const getNote = `/${exampleNotesV1.ExampleNotesService.typeName}/GetNote`;
const metrics = async () => (await fetch(`${s.service.adminUrl}/metrics`)).text();

test("PutNote then GetNote over gRPC: the note is in the service's own table, which its own role owns", async () => {
  await client().putNote({ note: { id: "e2e-1", text: "written over grpc" } }, { timeoutMs: 2000 });
  const { note } = await client().getNote({ id: "e2e-1" }, { timeoutMs: 2000 });
  assert.equal(note?.text, "written over grpc");
  assert.deepEqual(await s.platform.sql(`SELECT id, text FROM ${schema}.notes WHERE id = $1`, ["e2e-1"]), [{ id: "e2e-1", text: "written over grpc" }]);
  const owner = await s.platform.sql<{ tableowner: string }>("SELECT tableowner FROM pg_tables WHERE schemaname = $1 AND tablename = 'notes'", [schema]);
  assert.deepEqual(owner, [{ tableowner: manifest.database?.role }]);
});

test("an unknown id is NOT_FOUND and an empty one INVALID_ARGUMENT, with a message", async () => {
  await expectCode(client().getNote({ id: "no-such-note" }, { timeoutMs: 2000 }), Code.NotFound, /no-such-note/);
  await expectCode(client().getNote({ id: "" }, { timeoutMs: 2000 }), Code.InvalidArgument, /^id: must be at least 1 characters$/);
});

test("it reports SERVING on grpc.health.v1 once migrated, as Kubernetes probes it", async () => {
  const res = await createClient(healthV1.Health, transport()).check({ service: exampleNotesV1.ExampleNotesService.typeName }, { timeoutMs: 2000 });
  assert.equal(res.status, healthV1.HealthCheckResponse_ServingStatus.SERVING);
});

test("inherited from the runtime: a call without a deadline is counted and served; metrics on the admin port", async () => {
  const before = await metrics();
  await expectCode(client().getNote({ id: "no-deadline" }), Code.NotFound);
  const after = await metrics();
  const delta = (name: string, labels: Record<string, string>) => metricValue(after, name, labels) - metricValue(before, name, labels);
  assert.equal(delta("deadline_missing_total", { procedure: getNote }), 1, "an inner service counts a request without a deadline");
  assert.equal(delta("rpc_server_requests_total", { procedure: getNote, code: "not_found" }), 1);
});

if (manifest.public) {
  describe("published by the gateway (service.json: public)", () => {
    const viaGateway = (protocol: Parameters<typeof transportFor>[1]) =>
      createClient(exampleNotesV1.ExampleNotesService, transportFor(s.platform.gatewayUrl, protocol));

    test("Connect JSON over HTTP/1.1, as curl sends it, reads a note", async () => {
      await client().putNote({ note: { id: "via-gateway", text: "published" } }, { timeoutMs: 2000 });
      const res = await fetch(`${s.platform.gatewayUrl}${getNote}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ id: "via-gateway" }),
      });
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), { note: { id: "via-gateway", text: "published" } });
    });

    test("gRPC, gRPC-Web and Connect binary reach it through the gateway's one port; errors keep their code", async () => {
      for (const protocol of ["grpc", "grpc-web", "connect-binary"] as const) {
        await viaGateway(protocol).putNote({ note: { id: protocol, text: protocol } }, { timeoutMs: 2000 });
        assert.equal((await viaGateway(protocol).getNote({ id: protocol }, { timeoutMs: 2000 })).note?.text, protocol);
        await expectCode(viaGateway(protocol).getNote({ id: "missing" }, { timeoutMs: 2000 }), Code.NotFound, /missing/);
      }
    });

    test("the gateway's deadline reaches it: no call through the gateway arrives without one", async () => {
      const before = await metrics();
      for (let i = 0; i < 3; i++) await expectCode(viaGateway("connect-json").getNote({ id: `deadline-${i}` }), Code.NotFound);
      const after = await metrics();
      const delta = (name: string, labels: Record<string, string>) => metricValue(after, name, labels) - metricValue(before, name, labels);
      assert.equal(delta("rpc_server_requests_total", { procedure: getNote, code: "not_found" }), 3, "three calls reached it");
      assert.equal(delta("deadline_missing_total", { procedure: getNote }), 0, "each arrived with the edge's deadline");
    });
  });
}
