import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import * as net from "node:net";
import * as http from "node:http";
import * as http2 from "node:http2";
import { writeHead } from "./http-endpoints.js";
import { listen, type Listener } from "./listen.js";
import { watchRequest } from "./request-watchdog.js";

/**
 * A server whose handler does what the Connect adapter does in the bad
 * cases: reads the body and never answers ("hang"), or answers at once
 * without reading ("early"). The watchdog has to end both.
 */
describe("request watchdog", () => {
  let server: Listener;
  const closed = new Set<unknown>();
  before(async () => {
    server = await listen({
      host: "127.0.0.1",
      port: 0,
      http1: true,
      async handler(req, res) {
        res.once("close", () => closed.add(req.headers["x-id"]));
        watchRequest(req, res, Number(req.headers["x-timeout"] ?? 200), Number(req.headers["x-grace"] ?? 100));
        if (req.headers["x-mode"] === "early") {
          // As connect-node does past readMaxBytes: stop reading (without destroying), answer with trailers.
          await new Promise<void>((resolve) =>
            req.once("data", () => {
              req.pause();
              resolve();
            }),
          );
          writeHead(res, 200, { "content-type": "application/grpc" });
          res.addTrailers({ "grpc-status": "8", "grpc-message": "too big" });
          res.end();
        } else {
          req.resume(); // reads whatever comes, answers nothing
        }
      },
    });
  });
  after(() => {
    server.stopAccepting();
    server.destroy();
  });

  test("Connect streaming: a body that never completes is answered with an end-of-stream error, the form a streaming client reads", async () => {
    const answer = await new Promise<Buffer>((resolve) => {
      const s = net.connect(server.port, "127.0.0.1", () =>
        s.write("POST /x.v1.X/Y HTTP/1.1\r\nHost: x\r\ncontent-type: application/connect+json\r\ncontent-length: 50\r\n\r\n\x00\x00"),
      );
      const got: Buffer[] = [];
      s.on("data", (d: Buffer) => got.push(d));
      s.on("close", () => resolve(Buffer.concat(got)));
    });
    const text = answer.toString("latin1");
    assert.match(text, /^HTTP\/1\.1 200 /);
    assert.match(text, /content-type: application\/connect\+json/i);
    const body = answer.subarray(answer.indexOf("\r\n\r\n") + 4);
    assert.equal(body[0], 0x02, "an end-of-stream message");
    assert.deepEqual(JSON.parse(body.subarray(5, 5 + body.readUInt32BE(1)).toString()), {
      error: { code: "deadline_exceeded", message: "deadline exceeded before the request body arrived" },
    });
  });

  test("HTTP/1.1: a body that never completes is answered 504 after the deadline's grace period and the connection closed", async () => {
    const answer = await new Promise<string>((resolve) => {
      const s = net.connect(server.port, "127.0.0.1", () =>
        s.write("POST /x.v1.X/Y HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\ncontent-length: 50\r\n\r\n{"),
      );
      let got = "";
      s.on("data", (d: Buffer) => (got += d.toString()));
      s.on("close", () => resolve(got));
    });
    assert.match(answer, /^HTTP\/1\.1 504 /);
    assert.match(answer, /"code":"deadline_exceeded"/);
    assert.match(answer, /before the request body arrived/);
  });

  test("HTTP/1.1: a body still arriving at the deadline is read to its end, then answered 504 on a connection that stays open (no reset under the upload)", async () => {
    // Deadline 20 ms; the rest of the body comes 300 ms later (the server's timer, in this same
    // process, expires first however busy the machine is), well inside the grace period (60 s).
    const { answer, closedBeforeNext } = await new Promise<{ answer: string; closedBeforeNext: boolean }>((resolve, reject) => {
      let got = "";
      let closed = false;
      const s = net.connect(server.port, "127.0.0.1", () => {
        s.write("POST /x.v1.X/Y HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\nx-timeout: 20\r\nx-grace: 60000\r\ncontent-length: 2\r\n\r\n{");
        setTimeout(() => s.write("}"), 300);
      });
      s.on("error", reject);
      s.on("close", () => (closed = true));
      s.on("data", (d: Buffer) => {
        got += d.toString();
        if (!got.includes("deadline_exceeded")) return;
        // Answered: the connection is still usable (no "connection: close", not closed).
        setImmediate(() => {
          resolve({ answer: got, closedBeforeNext: closed });
          s.destroy();
        });
      });
    });
    assert.match(answer, /^HTTP\/1\.1 504 /);
    assert.match(answer, /before the request body arrived/);
    assert.doesNotMatch(answer, /connection: close/i);
    assert.equal(closedBeforeNext, false);
  });

  test("HTTP/1.1: after an answer given before the body was read to its end, the rest is discarded; the next request is answered", async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const post = (headers: Record<string, string>, body: Buffer) =>
      new Promise<{ status: number; connection: string | undefined }>((resolve, reject) => {
        const r = http.request({ host: "127.0.0.1", port: server.port, method: "POST", path: "/x.v1.X/Y", agent, headers, timeout: 5000 }, (res) => {
          res.resume();
          res.on("end", () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection }));
        });
        r.on("timeout", () => r.destroy(new Error("no answer")));
        r.on("error", reject);
        r.end(body);
      });
    try {
      assert.deepEqual(await post({ "x-mode": "early", "x-timeout": "60000" }, Buffer.alloc(1_000_000)), { status: 200, connection: "keep-alive" });
      assert.equal((await post({ "x-mode": "early", "x-timeout": "60000" }, Buffer.alloc(10))).status, 200, "the same connection answers the next request");
    } finally {
      agent.destroy();
    }
  });

  test("HTTP/2: a complete request that is never answered gets DEADLINE_EXCEEDED after the grace period", async () => {
    const session = http2.connect(`http://127.0.0.1:${server.port}`);
    try {
      const headers = await new Promise<http2.IncomingHttpHeaders>((resolve, reject) => {
        const st = session.request({ ":method": "POST", ":path": "/x.v1.X/Y", "content-type": "application/grpc", "x-timeout": "100" });
        st.on("response", resolve);
        st.on("error", reject);
        st.end(Buffer.from([0, 0, 0, 0, 0]));
      });
      assert.equal(headers["grpc-status"], "4");
    } finally {
      session.destroy();
    }
  });

  test("HTTP/2: a stalled upload is answered at its deadline and its stream closed", async () => {
    const session = http2.connect(`http://127.0.0.1:${server.port}`);
    try {
      const result = await new Promise<{ status: unknown; rst: number | undefined }>((resolve) => {
        const st = session.request({ ":method": "POST", ":path": "/x.v1.X/Y", "content-type": "application/grpc", "x-timeout": "100", "x-id": "stalled" });
        let status: unknown;
        st.on("response", (h) => (status = h["grpc-status"]));
        st.on("error", () => {});
        st.on("close", () => resolve({ status, rst: st.rstCode }));
        st.write(Buffer.from([0, 0, 0, 0, 10])); // promises 10 bytes, sends none
      });
      assert.deepEqual(result, { status: "4", rst: http2.constants.NGHTTP2_CANCEL });
    } finally {
      session.destroy();
    }
  });

  test("HTTP/2: an answer complete before the upload is resets the stream after the answer", async () => {
    const session = http2.connect(`http://127.0.0.1:${server.port}`);
    try {
      const result = await new Promise<{ status: unknown; rst: number | undefined }>((resolve) => {
        const st = session.request({
          ":method": "POST",
          ":path": "/x.v1.X/Y",
          "content-type": "application/grpc",
          "x-mode": "early",
          "x-timeout": "60000",
          "x-id": "early",
        });
        let status: unknown;
        st.on("trailers", (h) => (status = h["grpc-status"]));
        st.on("error", () => {});
        st.on("close", () => resolve({ status, rst: st.rstCode }));
        st.write(Buffer.alloc(1_000_000)); // more than the flow-control window: it cannot all be sent
      });
      assert.deepEqual(result, { status: "8", rst: http2.constants.NGHTTP2_CANCEL }, "the trailers arrive before the reset");
      // Closed when it closes: the bound only guards against a hang (50 polls of 10 ms were, on a
      // loaded machine, shorter than this process took to get to the close).
      const until = performance.now() + 10_000;
      while (!closed.has("early") && performance.now() < until) await new Promise((r) => setTimeout(r, 10));
      assert.ok(closed.has("early"), "the server's response closed, so whatever it held is released");
    } finally {
      session.destroy();
    }
  });
});
