import { test } from "node:test";
import assert from "node:assert/strict";
import { placeOf, summarizeProfile } from "./summarize-profile.js";

const frame = (functionName: string, url = "") => ({ functionName, url, lineNumber: 0 });

test("a frame's place: an npm package (scoped too), one of our packages, node's modules, V8's pseudo-frames", () => {
  assert.equal(placeOf(frame("inc", "file:///w/node_modules/prom-client/lib/counter.js")), "prom-client");
  assert.equal(placeOf(frame("x", "file:///w/node_modules/@connectrpc/connect/dist/esm/a.js")), "@connectrpc/connect");
  assert.equal(placeOf(frame("x", "file:///w/packages/runtime/src/server/serve.ts")), "@platform/runtime");
  assert.equal(placeOf(frame("x", "file:///w/services/orders/src/main.ts")), "services/orders");
  assert.equal(placeOf(frame("emit", "node:events")), "node:events");
  assert.equal(placeOf(frame("x", "node:internal/http2/core")), "node:internal/http2");
  assert.equal(placeOf(frame("(garbage collector)")), "(garbage collector)");
  assert.equal(placeOf(frame("writev")), "(native)");
});

test("self time per function and place from the samples' time deltas, idle left out", () => {
  const summary = summarizeProfile({
    nodes: [
      { id: 1, callFrame: frame("(root)") },
      { id: 2, callFrame: frame("(idle)") },
      { id: 3, callFrame: frame("inc", "file:///w/node_modules/prom-client/lib/counter.js") },
      { id: 4, callFrame: frame("handler", "file:///w/packages/runtime/src/server/serve.ts") },
    ],
    // Each sample's time is the delta to the next sample.
    samples: [3, 2, 4, 3, 4],
    timeDeltas: [0, 100, 1000, 300, 50],
  });
  // inc: 100 + 50; handler: 300 (the last sample has no next one, so no time); idle: 1000, not busy.
  assert.equal(summary.busyUs, 450);
  assert.deepEqual(summary.places, [
    ["@platform/runtime", 300],
    ["prom-client", 150],
  ]);
  assert.deepEqual(
    summary.functions.map(([k]) => k),
    ["handler packages/runtime/src/server/serve.ts:1", "inc node_modules/prom-client/lib/counter.js:1"],
  );
});
