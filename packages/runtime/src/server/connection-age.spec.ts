import { test } from "node:test";
import assert from "node:assert/strict";
import * as http2 from "node:http2";
import { connectionAgeMs, defaultConnectionAge } from "./connection-age.js";
import { listen } from "./listen.js";

test("each connection's age is the maximum within ± the jitter", () => {
  const c = { maxAgeMs: 300_000, jitter: 0.1, graceMs: 0 };
  assert.equal(
    connectionAgeMs(c, () => 0),
    270_000,
  );
  assert.equal(
    connectionAgeMs(c, () => 0.5),
    300_000,
  );
  assert.equal(
    connectionAgeMs(c, () => 0.999_999),
    330_000,
  );
  assert.deepEqual(defaultConnectionAge, { maxAgeMs: 300_000, jitter: 0.1, graceMs: 30_000 });
});

/** A request on `session` whose answer the server holds until `release` is called. */
function request(session: http2.ClientHttp2Session, path: string): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const s = session.request({ ":path": path });
    let data = "";
    s.on("data", (d: Buffer) => (data += d.toString()));
    s.on("end", () => resolve(data));
    s.on("error", reject);
  });
}

test("an old connection gets GOAWAY (NO_ERROR); the call in flight on it still finishes; a new one serves what follows", async () => {
  const held: (() => void)[] = [];
  let arrived: () => void = () => {};
  const l = await listen({
    host: "127.0.0.1",
    port: 0,
    http1: false,
    connectionAge: { maxAgeMs: 300, jitter: 0, graceMs: 10_000 },
    handler: (req, res) => {
      if (req.url === "/hold") {
        held.push(() => res.end("held"));
        arrived();
      } else res.end("ok");
    },
  });
  try {
    const first = http2.connect(`http://127.0.0.1:${l.port}`);
    first.on("error", () => {});
    const goaway = new Promise<number>((resolve) => first.once("goaway", (code) => resolve(code)));
    const inFlight = request(first, "/hold");
    await new Promise<void>((resolve) => (arrived = resolve));
    assert.equal(await goaway, http2.constants.NGHTTP2_NO_ERROR, "told to go away once old");
    for (const release of held) release();
    assert.equal(await inFlight, "held", "the call in flight finished");
    const second = http2.connect(`http://127.0.0.1:${l.port}`);
    assert.equal(await request(second, "/"), "ok");
    second.close();
  } finally {
    l.stopAccepting();
    l.destroy();
  }
});

test("after the grace period the connection is cut, calls or not", async () => {
  const l = await listen({
    host: "127.0.0.1",
    port: 0,
    http1: false,
    connectionAge: { maxAgeMs: 100, jitter: 0, graceMs: 100 },
    handler: () => {},
  });
  try {
    const session = http2.connect(`http://127.0.0.1:${l.port}`);
    session.on("error", () => {});
    let answered = false;
    const stream = session.request({ ":path": "/never-answered" });
    stream.on("response", () => (answered = true));
    stream.on("error", () => {});
    stream.resume();
    const closed = new Promise<void>((resolve) => session.once("close", resolve));
    await closed;
    assert.equal(answered, false, "the connection was cut under the unanswered call");
  } finally {
    l.stopAccepting();
    l.destroy();
  }
});

test("an age of 0 leaves connections alone", async () => {
  const l = await listen({ host: "127.0.0.1", port: 0, http1: false, connectionAge: { maxAgeMs: 0, jitter: 0, graceMs: 0 }, handler: (_q, r) => r.end("ok") });
  try {
    const session = http2.connect(`http://127.0.0.1:${l.port}`);
    let goaway = false;
    session.on("goaway", () => (goaway = true));
    for (let i = 0; i < 3; i++) assert.equal(await request(session, "/"), "ok");
    session.close();
    assert.equal(goaway, false);
  } finally {
    l.stopAccepting();
    l.destroy();
  }
});
