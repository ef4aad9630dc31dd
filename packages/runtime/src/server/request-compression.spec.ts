import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { brotliCompressSync, gzipSync } from "node:zlib";
import { Code, ConnectError } from "@connectrpc/connect";
import { requestCompressions } from "./request-compression.js";

describe("request compressions", () => {
  for (const c of requestCompressions) {
    const compressed = c.name === "gzip" ? gzipSync(Buffer.from('{"a":1}')) : brotliCompressSync(Buffer.from('{"a":1}'));

    test(`${c.name}: valid data decompresses`, async () => {
      assert.equal(Buffer.from(await c.decompress(compressed, 1024)).toString(), '{"a":1}');
    });

    test(`${c.name}: truncated data is INVALID_ARGUMENT, not INTERNAL`, async () => {
      await assert.rejects(c.decompress(compressed.subarray(0, compressed.length - 3), 1024), (e: unknown) => {
        assert.ok(e instanceof ConnectError);
        assert.equal(Code[e.code], Code[Code.InvalidArgument]);
        assert.match(e.rawMessage, /truncated/);
        return true;
      });
    });

    test(`${c.name}: more than readMaxBytes is still RESOURCE_EXHAUSTED`, async () => {
      const big = c.name === "gzip" ? gzipSync(Buffer.alloc(100_000)) : brotliCompressSync(Buffer.alloc(100_000));
      await assert.rejects(c.decompress(big, 1024), (e: unknown) => e instanceof ConnectError && e.code === Code.ResourceExhausted);
    });
  }
});
