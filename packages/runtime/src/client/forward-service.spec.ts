import { test } from "node:test";
import assert from "node:assert/strict";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { exampleNotesV1, healthV1 } from "@platform/proto";
import { forwardService } from "./forward-service.js";

/** The inner service (an all-unary API): records what reached it. In memory, through Connect's real router and serialization. */
function innerNotes() {
  const seen: { method: string; key: string | null; auth: string | null }[] = [];
  const transport = createRouterTransport((router) =>
    router.service(exampleNotesV1.ExampleNotesService, {
      getNote(req, ctx) {
        seen.push({ method: "GetNote", key: ctx.requestHeader.get("idempotency-key"), auth: ctx.requestHeader.get("authorization") });
        if (req.id !== "a") throw new ConnectError("no note", Code.NotFound);
        return create(exampleNotesV1.GetNoteResponseSchema, { note: { id: "a", text: "A" } });
      },
      putNote(_req, ctx) {
        seen.push({ method: "PutNote", key: ctx.requestHeader.get("idempotency-key"), auth: ctx.requestHeader.get("authorization") });
        throw new ConnectError("notes are read-only", Code.FailedPrecondition);
      },
    }),
  );
  return { seen, client: createClient(exampleNotesV1.ExampleNotesService, transport) };
}

function edgeOf(impl: ReturnType<typeof forwardService<typeof exampleNotesV1.ExampleNotesService>>) {
  const transport = createRouterTransport((router) => router.service(exampleNotesV1.ExampleNotesService, impl));
  return createClient(exampleNotesV1.ExampleNotesService, transport);
}

test("every method reaches the inner service with the same request and answers with its response", async () => {
  const inner = innerNotes();
  const edge = edgeOf(forwardService(exampleNotesV1.ExampleNotesService, inner.client));
  const res = await edge.getNote({ id: "a" });
  assert.equal(res.note?.text, "A");
  assert.deepEqual(
    inner.seen.map((s) => s.method),
    ["GetNote"],
  );
});

test("the inner service's error reaches the caller with its code and message", async () => {
  const edge = edgeOf(forwardService(exampleNotesV1.ExampleNotesService, innerNotes().client));
  await assert.rejects(edge.getNote({ id: "x" }), (e: unknown) => {
    const err = ConnectError.from(e);
    return err.code === Code.NotFound && err.rawMessage === "no note";
  });
});

test("inbound headers stay at the edge unless callOptions forwards them", async () => {
  const inner = innerNotes();
  const edge = edgeOf(
    forwardService(exampleNotesV1.ExampleNotesService, inner.client, (method, ctx) => ({
      headers: method.name === "PutNote" ? { "idempotency-key": ctx.requestHeader.get("idempotency-key") ?? "minted" } : {},
    })),
  );
  const headers = { authorization: "Bearer secret", "idempotency-key": "k-1" };
  await edge.getNote({ id: "a" }, { headers });
  await assert.rejects(edge.putNote({ note: { id: "a", text: "B" } }, { headers }), (e: unknown) => ConnectError.from(e).code === Code.FailedPrecondition);
  assert.deepEqual(inner.seen, [
    { method: "GetNote", key: null, auth: null },
    { method: "PutNote", key: "k-1", auth: null },
  ]);
});

test("a service with a streaming method is refused, naming the method", () => {
  const client = createClient(
    healthV1.Health,
    createRouterTransport(() => {}),
  );
  assert.throws(() => forwardService(healthV1.Health, client), /only unary methods can be forwarded; write handlers for Watch/);
});
