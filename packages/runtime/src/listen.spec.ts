import { test } from "node:test";
import assert from "node:assert/strict";
import * as http from "node:http";
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

/**
 * Guards against Nagle's algorithm on accepted sockets: with it on, a
 * response written in several pieces (headers, data, trailers, as a gRPC
 * answer is) waits for the peer's delayed ACK, about 40 ms a call on Linux,
 * while a response written at once over HTTP/1.1 does not (HTTP/2 always
 * writes a response in several frames). One listener answers both kinds
 * over both protocols, one request at a time; all four must cost about the
 * same. A ratio, not a time: with Nagle on, the slow ones took about 100
 * times as long as the fastest on this machine.
 */
test("a response written in pieces is as fast as one written at once, over h2c and HTTP/1.1 (no Nagle delay on any accepted socket)", async () => {
  const l = await listen({
    host: "127.0.0.1",
    port: 0,
    http1: true,
    handler: (req, res) => {
      // The two response kinds share the methods used here.
      const r = res as http.ServerResponse;
      r.writeHead(200, { "content-type": "text/plain" });
      if (req.url !== "/pieces") return void r.end("ab");
      setImmediate(() => {
        r.write("a");
        setImmediate(() => r.end("b"));
      });
    },
  });
  const session = http2.connect(`http://127.0.0.1:${l.port}`);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const viaH2 = (path: string) => () =>
    new Promise<void>((resolve, reject) => {
      const s = session.request({ ":path": path });
      s.on("data", () => {});
      s.on("end", resolve);
      s.on("error", reject);
    });
  const viaH1 = (path: string) => () =>
    new Promise<void>((resolve, reject) => {
      http
        .get({ host: "127.0.0.1", port: l.port, path, agent }, (res) => {
          res.on("data", () => {});
          res.on("end", resolve);
        })
        .on("error", reject);
    });
  const medianMs = async (call: () => Promise<void>) => {
    const times: number[] = [];
    for (let i = 0; i < 40; i++) {
      const t = performance.now();
      await call();
      times.push(performance.now() - t);
    }
    return times.sort((a, b) => a - b)[20]!;
  };
  try {
    const medians: Record<string, number> = {};
    for (const [protocol, via] of [["h2c", viaH2], ["HTTP/1.1", viaH1]] as const) {
      await via("/")();
      medians[`${protocol} in pieces`] = await medianMs(via("/pieces"));
      medians[`${protocol} at once`] = await medianMs(via("/"));
    }
    // Generous for 2 noisy cores; a Nagle stall is tens of times slower.
    const fastest = Math.max(0.5, Math.min(...Object.values(medians)));
    const shown = Object.entries(medians).map(([k, v]) => `${k} ${v.toFixed(2)} ms`).join(", ");
    for (const [kind, ms] of Object.entries(medians)) assert.ok(ms < fastest * 5, `${kind} is slow: ${shown}`);
  } finally {
    session.close();
    agent.destroy();
    l.stopAccepting();
    l.destroy();
  }
});
