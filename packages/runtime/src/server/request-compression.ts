import { Code, ConnectError } from "@connectrpc/connect";
import type { Compression } from "@connectrpc/connect/protocol";
import { compressionBrotli, compressionGzip } from "@connectrpc/connect-node";

/**
 * The request compressions a server accepts (gzip, br): connect-node's own,
 * except that a truncated compressed body is the caller's error.
 *
 * connect-node (2.1.2 to 2.3.0; docs/upstream, connect-compat.ts item 2)
 * answers corrupt gzip/brotli data with INVALID_ARGUMENT
 * but a truncated stream (zlib's Z_BUF_ERROR, "unexpected end of file")
 * with INTERNAL, which tells the caller the server failed (HTTP 500) and
 * makes a retrying client retry bad input.
 */
export const requestCompressions: Compression[] = [compressionGzip, compressionBrotli].map(truncatedIsInvalid);

function truncatedIsInvalid(c: Compression): Compression {
  return {
    name: c.name,
    compress: (bytes) => c.compress(bytes),
    decompress: (bytes, readMaxBytes) =>
      c.decompress(bytes, readMaxBytes).catch((e: unknown) => {
        const err = ConnectError.from(e);
        const cause = (err.cause as { code?: unknown } | undefined)?.code;
        if (err.code === Code.Internal && cause === "Z_BUF_ERROR") {
          throw new ConnectError(`decompression failed: ${c.name} data is truncated`, Code.InvalidArgument, undefined, undefined, e);
        }
        throw err;
      }),
  };
}
