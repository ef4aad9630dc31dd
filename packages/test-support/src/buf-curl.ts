import { execFile } from "node:child_process";
import { promisify } from "node:util";

const run = promisify(execFile);

/**
 * An outside client: `buf curl` with the repository's proto schema, gRPC
 * over h2c, calling `method` of the public CheckoutService at `gatewayUrl`.
 * Resolves with its output (a server stream's messages are JSON documents
 * one after another); rejects, with `stderr`, when it exits non-zero.
 */
export function bufCurl(gatewayUrl: string, method: string, body: object, extra: string[] = []): Promise<{ stdout: string; stderr: string }> {
  return run(
    "npx",
    [
      "buf",
      "curl",
      "--schema",
      "proto",
      "--protocol",
      "grpc",
      "--http2-prior-knowledge",
      "-d",
      JSON.stringify(body),
      ...extra,
      `${gatewayUrl}/checkout.v1.CheckoutService/${method}`,
    ],
    { cwd: process.cwd(), timeout: 60_000 },
  );
}
