import { test } from "node:test";
import assert from "node:assert/strict";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import type { Database, Tx } from "@platform/database";
import { receiptsV1 } from "@platform/proto";
import { ReceiptsService, maxIdLength } from "./receipts-service.js";

const request = (id: string) => create(receiptsV1.GetItemRequestSchema, { id });

async function codeOf(call: Promise<unknown>): Promise<string> {
  try {
    await call;
    return "ok";
  } catch (e) {
    return Code[ConnectError.from(e).code];
  }
}

/** Stands in for the database: answers the SELECT from a map and records every statement. */
function fakeDatabase(items: ReadonlyMap<string, string>) {
  const statements: { sql: string; values: unknown[] | undefined; readOnly: boolean }[] = [];
  const db: Pick<Database, "transaction"> = {
    async transaction(fn, opts) {
      const tx: Tx = {
        async query<R>(sql: string, values?: unknown[]) {
          statements.push({ sql, values, readOnly: opts?.readOnly === true });
          const id = String(values?.[0]);
          const name = items.get(id);
          const rows = name === undefined ? [] : [{ id, name }];
          return { rows: rows as R[], rowCount: rows.length, command: "SELECT", oid: 0, fields: [] };
        },
      };
      return fn(tx);
    },
  };
  return { db, statements };
}

test("getItem reads the item in one read-only statement", async () => {
  const { db, statements } = fakeDatabase(new Map([["a-1", "First"]]));
  const res = await new ReceiptsService(db).getItem(request("a-1"));
  assert.deepEqual([res.item?.id, res.item?.name], ["a-1", "First"]);
  assert.equal(statements.length, 1);
  assert.deepEqual(statements[0]?.values, ["a-1"], "the id travels as a parameter, never in the SQL text");
  assert.equal(statements[0]?.readOnly, true);
});

test("getItem is NOT_FOUND for an unknown id", async () => {
  const { db } = fakeDatabase(new Map());
  assert.equal(await codeOf(new ReceiptsService(db).getItem(request("nope"))), "NotFound");
});

test("getItem refuses an empty or overlong id with INVALID_ARGUMENT, before any statement", async () => {
  const { db, statements } = fakeDatabase(new Map());
  assert.equal(await codeOf(new ReceiptsService(db).getItem(request(""))), "InvalidArgument");
  assert.equal(await codeOf(new ReceiptsService(db).getItem(request("x".repeat(maxIdLength + 1)))), "InvalidArgument");
  assert.equal(statements.length, 0);
});
