import { test } from "node:test";
import assert from "node:assert/strict";
import * as http2 from "node:http2";
import { listen } from "./listen.js";

test("one port serves HTTP/1.1 and h2c (prior knowledge), routed by the first bytes", async () => {
  const l = await listen({
    host: "127.0.0.1",
    port: 0,
    http1: true,
    handler: (req, res) => {
      res.writeHead(200, { "content-type": "text/plain" });
      res.end(`HTTP/${req.httpVersion}`);
    },
  });
  try {
    const h1 = await fetch(`http://127.0.0.1:${l.port}/`);
    assert.equal(await h1.text(), "HTTP/1.1");
    const session = http2.connect(`http://127.0.0.1:${l.port}`);
    const body = await new Promise<string>((resolve, reject) => {
      const s = session.request({ ":path": "/" });
      let data = "";
      s.on("data", (d: Buffer) => (data += d.toString()));
      s.on("end", () => resolve(data));
      s.on("error", reject);
    });
    session.close();
    assert.equal(body, "HTTP/2.0");
  } finally {
    l.stopAccepting();
    l.destroy();
  }
});

test("an h2c-only listener refuses HTTP/1.1", async () => {
  const l = await listen({ host: "127.0.0.1", port: 0, http1: false, handler: (_req, res) => res.end("x") });
  try {
    await assert.rejects(fetch(`http://127.0.0.1:${l.port}/`));
  } finally {
    l.stopAccepting();
    l.destroy();
  }
});
