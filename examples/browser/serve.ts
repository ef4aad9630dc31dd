/**
 * Serves the browser example: index.html and app.ts bundled by esbuild
 * (@platform/client, Connect-Web and all) as app.js.
 *
 *   npm run example:browser    # prints the page's address and how to start the platform for it
 */
import { createServer, type Server } from "node:http";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));

export interface ExampleServer {
  /** The page's origin: the gateway must allow it (CORS_ALLOWED_ORIGINS). */
  origin: string;
  close(): Promise<void>;
}

/** Bundles the page (once) and serves it on host:port (0: a free port). */
export async function serveBrowserExample(port = 0, host = "127.0.0.1"): Promise<ExampleServer> {
  const bundle = await build({
    entryPoints: [here("./app.ts")],
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    write: false,
    logLevel: "silent",
  });
  const appJs = bundle.outputFiles[0]!.contents;
  const html = readFileSync(here("./index.html"));
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (path === "/" || path === "/index.html") res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(html);
    else if (path === "/app.js") res.writeHead(200, { "content-type": "text/javascript; charset=utf-8" }).end(appJs);
    else res.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
  });
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  const { port: actual } = server.address() as { port: number };
  return {
    origin: `http://${host}:${actual}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const gateway = process.env["GATEWAY_URL"] ?? "http://127.0.0.1:8080";
  const page = await serveBrowserExample(Number(process.env["EXAMPLE_PORT"] ?? 5173));
  console.log(`The example page: ${page.origin}/?gateway=${encodeURIComponent(gateway)}`);
  console.log(`The gateway must let this origin in: start the platform with CORS_ALLOWED_ORIGINS=${page.origin} npm start`);
}
