import { test } from "node:test";
import assert from "node:assert/strict";
import { FakeClock, seededRandom } from "@platform/resilience";
import { Balancer } from "./balancer.js";
import { defaultOutlierDetection } from "./outlier-detector.js";

function balancer(list: { origins: string[] }, clock = new FakeClock()) {
  const closed: string[] = [];
  const b = new Balancer({
    dependency: "orders",
    resolver: () => Promise.resolve([...list.origins]),
    connect: (origin) => ({ close: () => closed.push(origin) }),
    clock,
    random: seededRandom(7),
    outlierDetection: defaultOutlierDetection,
  });
  return { b, clock, closed };
}

/** Runs `calls` calls one after another, each taking `latency(origin)`; counts calls per replica. */
function serve(b: Balancer<{ close(): void }>, clock: FakeClock, calls: number, latency: (origin: string) => number): Map<string, number> {
  const counts = new Map<string, number>();
  for (let i = 0; i < calls; i++) {
    const e = b.pick()!;
    counts.set(e.origin, (counts.get(e.origin) ?? 0) + 1);
    const end = e.begin();
    clock.advance(latency(e.origin));
    b.record(e, "success", end());
  }
  return counts;
}

test("equal replicas share the calls evenly", async () => {
  const { b, clock } = balancer({ origins: ["a", "b", "c"] });
  await b.refresh();
  const counts = serve(b, clock, 3000, () => 5);
  for (const o of ["a", "b", "c"]) assert.ok(Math.abs(counts.get(o)! / 3000 - 1 / 3) < 0.1, `${o}: ${counts.get(o)}`);
});

test("equal replicas called one call at a time share evenly, although each one's first call was slow (its connection opening)", async () => {
  const { b, clock } = balancer({ origins: ["a", "b", "c"] });
  await b.refresh();
  const jitter = seededRandom(9);
  const seen = new Set<string>();
  const counts = new Map<string, number>();
  for (let i = 0; i < 3000; i++) {
    const e = b.pick()!;
    counts.set(e.origin, (counts.get(e.origin) ?? 0) + 1);
    const end = e.begin();
    clock.advance(seen.has(e.origin) ? 4 + 2 * jitter() : 20);
    seen.add(e.origin);
    b.record(e, "success", end());
    clock.advance(10);
  }
  for (const o of ["a", "b", "c"]) assert.ok(Math.abs(counts.get(o)! / 3000 - 1 / 3) < 0.1, `${o}: ${[...counts.values()].join(", ")}`);
});

test("a slow replica gets few calls: peak EWMA times outstanding", async () => {
  const { b, clock } = balancer({ origins: ["a", "b", "c"] });
  await b.refresh();
  const counts = serve(b, clock, 3000, (o) => (o === "c" ? 200 : 5));
  assert.ok(counts.get("c")! / 3000 < 0.1, `the 40x slower replica's share: ${counts.get("c")}`);
});

test("a replica that stopped answering is avoided before any of its calls ends (its oldest call's age)", async () => {
  const { b, clock } = balancer({ origins: ["a", "b", "c"] });
  await b.refresh();
  serve(b, clock, 300, () => 5);
  // c stops: its calls never end.
  const counts = new Map<string, number>();
  for (let i = 0; i < 1000; i++) {
    const e = b.pick()!;
    counts.set(e.origin, (counts.get(e.origin) ?? 0) + 1);
    if (e.origin === "c") {
      e.begin();
      continue;
    }
    const end = e.begin();
    clock.advance(5);
    b.record(e, "success", end());
  }
  assert.ok((counts.get("c") ?? 0) <= 10, `calls sent to the stopped replica: ${counts.get("c")}`);
});

test("a retry or hedge avoids the replicas its call already tried while another is available", async () => {
  const { b } = balancer({ origins: ["a", "b"] });
  await b.refresh();
  for (let i = 0; i < 50; i++) assert.equal(b.pick(new Set(["a"]))!.origin, "b");
  assert.ok(["a", "b"].includes(b.pick(new Set(["a", "b"]))!.origin), "all tried: any");
});

test("an ejected replica gets no calls until its ejection runs out", async () => {
  const { b, clock } = balancer({ origins: ["a", "b", "c"] });
  await b.refresh();
  b.record(b.endpoint("a")!, "refused");
  assert.equal(serve(b, clock, 300, () => 1).get("a"), undefined);
  clock.advance(1_000);
  assert.ok((serve(b, clock, 300, () => 1).get("a") ?? 0) > 50, "probed back in, and it answers");
});

test("a single address takes every call, tried or ejected (there is no other); a new address replaces it at the next resolution", async () => {
  const list = { origins: ["a"] };
  const { b } = balancer(list);
  await b.refresh();
  assert.equal(b.pick()?.origin, "a");
  assert.equal(b.pick(new Set(["a"]))?.origin, "a", "a retry has nowhere else to go");
  b.record(b.endpoint("a")!, "refused");
  assert.equal(b.pick()?.origin, "a", "ejected, but the only one there is");
  list.origins = ["b"];
  await b.refresh();
  assert.equal(b.pick()?.origin, "b", "the vanished one is passed over for the new one");
  list.origins = [];
  await b.refresh();
  assert.equal(b.pick()?.origin, "b", "an empty resolution keeps the list");
});

test("a grown list is used from the next resolution; a vanished replica is drained: no new calls, closed when its calls end", async () => {
  const list = { origins: ["a", "b"] };
  const { b, clock, closed } = balancer(list);
  await b.refresh();
  list.origins = ["a", "b", "c"];
  assert.equal(serve(b, clock, 100, () => 1).get("c"), undefined, "not before the resolver is asked again");
  await b.refresh();
  assert.ok((serve(b, clock, 300, () => 1).get("c") ?? 0) > 50, "the new replica takes its share");

  const inFlight = b.endpoint("a")!;
  const end = inFlight.begin();
  assert.ok(inFlight.connection, "the call opened a's connection");
  list.origins = ["b", "c"];
  await b.refresh();
  assert.equal(serve(b, clock, 100, () => 1).get("a"), undefined, "no new call to a vanished replica");
  assert.deepEqual(closed, [], "its call in flight keeps its connection");
  b.record(inFlight, "success", end());
  assert.deepEqual(closed, ["a"], "closed once its last call ended");
  assert.deepEqual(b.addresses().sort(), ["b", "c"]);
  const counted = [...b.callCounts()].find((c) => c.replica === "a")!;
  assert.ok((counted.outcomes["ok"] ?? 0) > 0, "a drained replica's calls stay counted");
});

test("a failed or empty resolution keeps the list it had", async () => {
  let answer: () => Promise<string[]> = () => Promise.resolve(["a", "b"]);
  const b = new Balancer({
    dependency: "orders",
    resolver: () => answer(),
    connect: () => ({ close() {} }),
    clock: new FakeClock(),
    random: seededRandom(1),
    outlierDetection: defaultOutlierDetection,
  });
  await b.refresh();
  answer = () => Promise.reject(new Error("ENOTFOUND orders"));
  await b.refresh();
  assert.deepEqual(b.addresses(), ["a", "b"]);
  assert.match(String(b.resolveError()), /ENOTFOUND/);
  answer = () => Promise.resolve([]);
  await b.refresh();
  assert.deepEqual(b.addresses(), ["a", "b"]);
});

test("of two replicas, one four times slower gets about a fifth of the calls (odds by 1/cost), not none", async () => {
  const { b, clock } = balancer({ origins: ["fast", "slow"] });
  await b.refresh();
  const counts = serve(b, clock, 5000, (o) => (o === "slow" ? 20 : 5));
  const share = counts.get("slow")! / 5000;
  assert.ok(share > 0.1 && share < 0.3, `the slower replica's share: ${share}`);
});

test("per connection (a ClusterIP Service's way, for comparison): one replica until a call fails on it, then any at random, dead or not", async () => {
  const b = new Balancer({
    dependency: "orders",
    resolver: () => Promise.resolve(["a", "b", "c"]),
    connect: () => ({ close() {} }),
    clock: new FakeClock(),
    random: seededRandom(5),
    outlierDetection: defaultOutlierDetection,
    mode: "per-connection",
  });
  await b.refresh();
  const first = b.pick()!;
  for (let i = 0; i < 50; i++) {
    const e = b.pick()!;
    assert.equal(e, first);
    b.record(e, "success", 1);
  }
  const seen = new Set<string>();
  for (let i = 0; i < 50; i++) {
    const e = b.pick()!;
    seen.add(e.origin);
    b.record(e, "refused");
  }
  assert.deepEqual([...seen].sort(), ["a", "b", "c"], "a refused replica is not ejected: picked again at random");
  assert.equal(b.ejectedCount(), 0);
});
