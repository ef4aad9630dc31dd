/**
 * The service through its real routes, over connect-es's in-memory
 * transport: requests and errors are encoded and decoded as on the wire,
 * without a port.
 */
import { test } from "node:test";
import { readFileSync } from "node:fs";
import assert from "node:assert/strict";
import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { exampleEchoV1 } from "@platform/proto";
import { validationInterceptor } from "@platform/proto/validation";
import { apiRoutes } from "@platform/runtime";
import { defaults, loadConfig } from "./config.js";
import { ExampleEchoService, maxMessageLength } from "./example-echo-service.js";

// Behind the proto's declared rules, as serve() checks them before a handler runs.
const transport = () =>
  createRouterTransport(apiRoutes(defaults.apis, new ExampleEchoService()).routes, { router: { interceptors: [validationInterceptor()] } });
const client = () => createClient(exampleEchoV1.ExampleEchoService, transport());

async function codeOf(call: Promise<unknown>): Promise<string> {
  try {
    await call;
    return "ok";
  } catch (e) {
    return Code[ConnectError.from(e).code];
  }
}

test("echo answers the message it was sent", async () => {
  assert.equal((await client().echo({ message: "hello" })).message, "hello");
});

test("echo refuses an empty or overlong message with INVALID_ARGUMENT, naming the limit", async () => {
  assert.equal(await codeOf(client().echo({ message: "" })), "InvalidArgument");
  await assert.rejects(client().echo({ message: "x".repeat(maxMessageLength + 1) }), (e) => {
    const err = ConnectError.from(e);
    return err.code === Code.InvalidArgument && err.rawMessage.includes(`at most ${maxMessageLength}`);
  });
  assert.equal(await codeOf(client().echo({ message: "x".repeat(maxMessageLength) })), "ok");
});

test("the default ports are the manifest's, and PORT overrides them", () => {
  const manifest = JSON.parse(readFileSync(new URL("../service.json", import.meta.url), "utf8")) as { ports: { rpc: number; admin: number } };
  const config = loadConfig({});
  assert.deepEqual([config.server.port, config.server.adminPort], [manifest.ports.rpc, manifest.ports.admin]);
  assert.equal(loadConfig({ PORT: "18000" }).server.port, 18000);
});
