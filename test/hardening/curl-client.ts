/**
 * The same raw requests as WireClient's HTTP/1.1, sent by curl: a second,
 * independent HTTP/1.1 client, so that what the fuzz learns about the
 * gateway's HTTP/1.1 path is not an artefact of node's http client (its
 * framing, its keep-alive handling, what it refuses to send).
 */
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import type { WireRequest, WireResponse } from "./wire.js";

/** Sends one HTTP/1.1 request with curl; rejects when curl reports a transport failure. */
export async function sendWithCurl(baseUrl: string, req: WireRequest, timeoutMs: number): Promise<WireResponse> {
  const dir = await mkdtemp(path.join(tmpdir(), "fuzz-curl-"));
  try {
    const bodyFile = path.join(dir, "request");
    const headFile = path.join(dir, "head");
    const outFile = path.join(dir, "response");
    const args = ["--silent", "--show-error", "--http1.1", "--max-time", String(Math.ceil(timeoutMs / 1000)), "--request", req.method];
    // curl's own defaults that would change the request: no Expect: 100-continue,
    // no form content type, no Accept.
    const headers: Record<string, string> = { expect: "", accept: "", "content-type": "", ...req.headers };
    for (const [name, value] of Object.entries(headers)) {
      // "name:" removes a header in curl; "name;" sends it empty.
      args.push("--header", value === "" ? (name in req.headers ? `${name};` : `${name}:`) : `${name}: ${value}`);
    }
    if (req.method !== "GET" || req.body.length > 0) {
      await writeFile(bodyFile, req.body);
      args.push("--data-binary", `@${bodyFile}`);
    }
    args.push("--dump-header", headFile, "--output", outFile, `${baseUrl}${req.path}`);
    await new Promise<void>((resolve, reject) =>
      execFile("curl", args, { encoding: "latin1" }, (error, _stdout, stderr) =>
        error ? reject(new Error(`curl: ${stderr.trim() || error.message}`)) : resolve(),
      ),
    );
    // Header blocks: any "HTTP/1.1 100 Continue", the response's, then (chunked) trailers, which curl writes here too.
    const blocks = (await readFile(headFile, "latin1")).split(/\r\n\r\n/).filter((b) => b.trim() !== "");
    const responseAt = blocks.findIndex((b) => /^HTTP\/\S+ [2-5]\d\d/.test(b));
    const fields = (block: string | undefined, skipStatusLine: boolean) => {
      const out: Record<string, string> = {};
      for (const line of (block ?? "").split("\r\n").slice(skipStatusLine ? 1 : 0)) {
        const i = line.indexOf(":");
        if (i > 0) out[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
      }
      return out;
    };
    const statusLine = blocks[responseAt] ?? "";
    const headersOut = fields(statusLine, true);
    const trailers = fields(blocks[responseAt + 1], false);
    return { status: Number(statusLine.split(" ")[1]), headers: headersOut, trailers, body: await readFile(outFile).catch(() => Buffer.alloc(0)) };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
