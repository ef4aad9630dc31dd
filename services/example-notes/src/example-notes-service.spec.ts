/**
 * The service through its real routes, over connect-es's in-memory
 * transport, on a real PostgreSQL (embedded, in a temp directory) migrated
 * with the service's own migrations: what the SQL does is checked by the
 * database that runs it.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { createDatabase, migrate, type Database } from "@platform/database";
import { startEmbeddedPostgres, type EmbeddedPostgres } from "@platform/embedded-postgres";
import { exampleNotesV1 } from "@platform/proto";
import { validationInterceptor } from "@platform/proto/validation";
import { apiRoutes } from "@platform/runtime";
import { defaults } from "./config.js";
import { ExampleNotesService, limits } from "./example-notes-service.js";

let dir: string;
let server: EmbeddedPostgres;
let db: Database;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "example-notes-spec-"));
  chmodSync(dir, 0o755); // the database runs as an unprivileged user when we are root
  server = await startEmbeddedPostgres({ dataDir: join(dir, "data") });
  db = createDatabase({ name: "example-notes-db", connectionString: server.url, maxConnections: 2, minBudgetMs: 10 });
  await migrate(db, { schema: defaults.schema(), directory: fileURLToPath(new URL("../migrations", import.meta.url)) });
});
after(async () => {
  try {
    await db?.close();
    await server?.stop();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

// Behind the proto's declared rules, as serve() checks them before a handler runs.
const transport = () =>
  createRouterTransport(apiRoutes(defaults.apis, new ExampleNotesService(db)).routes, { router: { interceptors: [validationInterceptor()] } });
const client = () => createClient(exampleNotesV1.ExampleNotesService, transport());
const rows = async () => (await db.transaction((tx) => tx.query<{ id: string; text: string }>("SELECT id, text FROM example_notes.notes ORDER BY id"))).rows;

async function codeOf(call: Promise<unknown>): Promise<string> {
  try {
    await call;
    return "ok";
  } catch (e) {
    return Code[ConnectError.from(e).code];
  }
}

test("putNote stores the note and getNote reads it back", async () => {
  const put = await client().putNote({ note: { id: "n-1", text: "first" } });
  assert.deepEqual([put.note?.id, put.note?.text], ["n-1", "first"]);
  const got = await client().getNote({ id: "n-1" });
  assert.deepEqual([got.note?.id, got.note?.text], ["n-1", "first"]);
});

test("putNote twice with the same id leaves one row, with the last text", async () => {
  await client().putNote({ note: { id: "n-2", text: "draft" } });
  await client().putNote({ note: { id: "n-2", text: "final" } });
  await client().putNote({ note: { id: "n-2", text: "final" } });
  assert.deepEqual(
    (await rows()).filter((r) => r.id === "n-2"),
    [{ id: "n-2", text: "final" }],
  );
});

test("getNote is NOT_FOUND for an unknown id, naming it", async () => {
  await assert.rejects(
    client().getNote({ id: "no-such-note" }),
    (e) => ConnectError.from(e).code === Code.NotFound && /no-such-note/.test(ConnectError.from(e).rawMessage),
  );
});

test("an empty or overlong id or text is INVALID_ARGUMENT and writes nothing", async () => {
  const before = await rows();
  for (const note of [
    { id: "", text: "t" },
    { id: "x".repeat(limits.id + 1), text: "t" },
    { id: "n-3", text: "" },
    { id: "n-3", text: "x".repeat(limits.text + 1) },
  ]) {
    assert.equal(await codeOf(client().putNote({ note })), "InvalidArgument", JSON.stringify(note).slice(0, 60));
  }
  assert.equal(await codeOf(client().putNote({})), "InvalidArgument", "a request without a note");
  assert.equal(await codeOf(client().getNote({ id: "" })), "InvalidArgument");
  assert.deepEqual(await rows(), before);
  assert.equal(
    await codeOf(client().putNote({ note: { id: "x".repeat(limits.id), text: "x".repeat(limits.text) } })),
    "ok",
    "the limits themselves are accepted",
  );
});
