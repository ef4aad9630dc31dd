import { test } from "node:test";
import assert from "node:assert/strict";
import { withHeartbeat } from "./heartbeat.js";

test("an idle stream gets a heartbeat each interval, between its own messages, in order", async () => {
  let heartbeats = 0;
  let releaseSecond!: () => void;
  const secondMayGo = new Promise<void>((r) => (releaseSecond = r));
  async function* source() {
    yield "first";
    // Idle until the consumer has seen two heartbeats.
    await secondMayGo;
    yield "second";
  }
  const seen: string[] = [];
  for await (const m of withHeartbeat(source(), 20, () => "heartbeat")) {
    seen.push(m);
    if (m === "heartbeat" && ++heartbeats === 2) releaseSecond();
  }
  assert.deepEqual(seen, ["first", "heartbeat", "heartbeat", "second"]);
});

test("the consumer leaving ends the source (its finally runs)", async () => {
  let ended = false;
  async function* source() {
    try {
      yield 1;
      yield 2;
    } finally {
      ended = true;
    }
  }
  for await (const m of withHeartbeat(source(), 1000, () => 0)) {
    if (m === 1) break;
  }
  await new Promise((r) => setImmediate(r));
  assert.equal(ended, true);
});

test("interval 0: the messages unchanged, no heartbeat", async () => {
  async function* source() {
    yield 1;
    yield 2;
  }
  const seen: number[] = [];
  for await (const m of withHeartbeat(source(), 0, () => 0)) seen.push(m);
  assert.deepEqual(seen, [1, 2]);
});
