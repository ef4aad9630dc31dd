// npm test: own process (it reads prom-client's global registry, which every spec's interceptors in a shared process also write)
import { test } from "node:test";
import assert from "node:assert/strict";
import { MethodOptions_IdempotencyLevel as IdempotencyLevel } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient, createRouterTransport, type UnaryRequest, type UnaryResponse } from "@connectrpc/connect";
import { FakeScheduler, runInScope, type CallScope } from "@platform/resilience";
import { Counter } from "@platform/test-support";
import { classOf, isolationInterceptor, type IsolationConfig } from "./isolation-interceptor.js";
import { register } from "../observability/metrics.js";
import { outboundInterceptor } from "./outbound-interceptor.js";

const config: IsolationConfig = {
  maxConcurrent: 4,
  maxQueue: 4,
  breaker: { volumeThreshold: 5, errorThresholdPercentage: 50, windowMs: 10_000, resetTimeoutMs: 60_000 },
};

function call(method: string, idempotency?: IdempotencyLevel, service = "orders.v1.OrdersService") {
  return { service: { typeName: service }, method: { name: method, ...(idempotency !== undefined ? { idempotency } : {}) } } as unknown as UnaryRequest;
}

const read = (method: string, fast = false) =>
  ({ ...call(method, IdempotencyLevel.NO_SIDE_EFFECTS), header: new Headers(fast ? { "x-fast": "1" } : {}) }) as UnaryRequest;

function scopeUntil(clock: FakeScheduler, deadlineAt: number): CallScope {
  return { deadlineAt, clock, signal: new AbortController().signal, requestId: "r", procedure: "/x.v1.X/Y" };
}

async function gauge(name: string, labels: Record<string, string>): Promise<number | undefined> {
  const m = await register.getSingleMetric(name)?.get();
  return m?.values.find((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x))?.value;
}

test("a health check of the dependency passes untouched: no slot, no breaker, whatever their state", async () => {
  let healthCalls = 0;
  const next = async (req: UnaryRequest): Promise<UnaryResponse> => {
    if (req.service.typeName === "grpc.health.v1.Health") {
      healthCalls++;
      return { header: new Headers() } as UnaryResponse;
    }
    throw new ConnectError("orders: down", Code.Unavailable);
  };
  const intercepted = isolationInterceptor("orders-health", { ...config, maxConcurrent: 1, maxQueue: 0 }, 0)(next as never);
  for (let i = 0; i < 10; i++) await intercepted(call("CreateOrder")).catch(() => {});
  const refused = await intercepted(call("CreateOrder")).catch((e: unknown) => ConnectError.from(e));
  assert.match(refused instanceof ConnectError ? refused.rawMessage : "", /circuit open/);
  // The breaker is open and the one slot could be taken: the probe's checks still go through, all at once.
  await Promise.all(Array.from({ length: 3 }, () => intercepted(call("Check", undefined, "grpc.health.v1.Health"))));
  assert.equal(healthCalls, 3);
});

test("breakers are per method: a failing method is cut off, a working one on the same dependency is not", async () => {
  const reached: string[] = [];
  const next = async (req: UnaryRequest): Promise<UnaryResponse> => {
    reached.push(req.method.name);
    if (req.method.name === "CreateOrder") throw new ConnectError("orders: stock down", Code.Unavailable);
    return { header: new Headers() } as UnaryResponse;
  };
  const intercepted = isolationInterceptor("orders-test", config, 0)(next as never);
  for (let i = 0; i < 10; i++) await intercepted(call("CreateOrder")).catch(() => {});
  const before = reached.filter((m) => m === "CreateOrder").length;
  const err = await intercepted(call("CreateOrder")).catch((e: unknown) => ConnectError.from(e));
  assert.ok(err instanceof ConnectError && err.code === Code.Unavailable && /CreateOrder: circuit open/.test(err.rawMessage));
  assert.ok(Number(err.metadata.get("grpc-retry-pushback-ms")) > 0, "an open breaker says when its next trial is");
  assert.equal(err.metadata.get("x-failed-dependency"), "orders-test", "and that it refused for orders-test, for the breakers above");
  assert.equal(reached.filter((m) => m === "CreateOrder").length, before, "an open breaker does not call");
  await intercepted(call("GetOrder"));
  assert.equal(reached.at(-1), "GetOrder", "the other method still reaches the dependency");
});

test("a full bulkhead refuses at once, naming the dependency and class, with a pushback hint, without counting against the breaker", async () => {
  let release!: () => void;
  const hold = new Promise<void>((r) => (release = r));
  const next = async (): Promise<UnaryResponse> => {
    await hold;
    return { header: new Headers() } as UnaryResponse;
  };
  const intercepted = isolationInterceptor("stock-test", { ...config, maxConcurrent: 1, maxQueue: 0 }, 0)(next as never);
  const first = intercepted(read("GetPrices"));
  for (let i = 0; i < 10; i++) {
    await assert.rejects(
      intercepted(read("GetPrices")),
      (e: ConnectError) =>
        e.code === Code.Unavailable &&
        /^stock-test \(GetPrices calls\): bulkhead full/.test(e.rawMessage) &&
        e.metadata.has("grpc-retry-pushback-ms") &&
        e.metadata.get("x-failed-dependency") === "stock-test",
    );
  }
  release();
  await first;
  await intercepted(read("GetPrices")); // the breaker did not open on our own refusals
});

test("method classes: each method of a dependency has its own slots, so a slow one cannot starve a fast one, even another read", async () => {
  const held: (() => void)[] = [];
  const next = async (req: UnaryRequest): Promise<UnaryResponse> => {
    if (req.method.name === "ListProducts") await new Promise<void>((r) => held.push(r)); // a read behind a slow dependency
    return { header: new Headers() } as UnaryResponse;
  };
  const intercepted = isolationInterceptor("checkout-classes", { ...config, maxConcurrent: 2, maxQueue: 0 }, 0)(next as never);
  const slow = [intercepted(read("ListProducts")), intercepted(read("ListProducts"))];
  await assert.rejects(intercepted(read("ListProducts")), /checkout-classes \(ListProducts calls\): bulkhead full/);
  for (let i = 0; i < 10; i++) await intercepted(read("GetOrder")); // never waits behind ListProducts
  for (let i = 0; i < 10; i++) await intercepted(call("PlaceOrder", IdempotencyLevel.IDEMPOTENT));
  assert.equal(await gauge("bulkhead_in_use", { dependency: "checkout-classes", class: "ListProducts" }), 2);
  assert.equal(await gauge("bulkhead_in_use", { dependency: "checkout-classes", class: "GetOrder" }), 0);
  for (const r of held) r();
  await Promise.all(slow);
});

test("methods share a class only when the map says so", async () => {
  assert.equal(classOf({ name: "GetOrder" }, undefined), "GetOrder");
  assert.equal(classOf({ name: "Export" }, { Export: "bulk", Import: "bulk" }), "bulk");
  assert.equal(classOf({ name: "Import" }, { Export: "bulk", Import: "bulk" }), "bulk");
  assert.equal(classOf({ name: "Search" }, { Export: "bulk" }), "Search");
  let release!: () => void;
  const hold = new Promise<void>((r) => (release = r));
  const next = async (): Promise<UnaryResponse> => {
    await hold;
    return { header: new Headers() } as UnaryResponse;
  };
  const intercepted = isolationInterceptor(
    "shared-class",
    { ...config, maxConcurrent: 1, maxQueue: 0, methodClasses: { Export: "bulk", Import: "bulk" } },
    0,
  )(next as never);
  const first = intercepted(call("Export"));
  await assert.rejects(intercepted(call("Import")), /shared-class \(bulk calls\): bulkhead full/);
  release();
  await first;
});

test("a call that cannot get a slot before its deadline is refused before queueing, with the expected wait plus run as pushback", async () => {
  const clock = new FakeScheduler(1_000);
  const held: (() => void)[] = [];
  const next = async (): Promise<UnaryResponse> => {
    await new Promise<void>((r) => held.push(r));
    return { header: new Headers() } as UnaryResponse;
  };
  const intercepted = isolationInterceptor("stock-wait", { ...config, limit: "fixed", maxConcurrent: 2, maxQueue: 10 }, 0, { clock, scheduler: clock })(
    next as never,
  );
  const running = [intercepted(read("GetPrices")), intercepted(read("GetPrices"))];
  clock.advance(400); // both have been running 400 ms: service time >= 400 ms
  // Position 1 of 2 slots: 200 ms to wait + 400 to run; 700 ms left fits, 500 ms does not.
  const queued = runInScope(scopeUntil(clock, clock.now() + 700), () => intercepted(read("GetPrices")));
  const err = await runInScope(scopeUntil(clock, clock.now() + 500), () => intercepted(read("GetPrices"))).catch((e: unknown) => ConnectError.from(e));
  assert.ok(err instanceof ConnectError);
  assert.equal(err.code, Code.Unavailable);
  assert.match(err.rawMessage, /^stock-wait \(GetPrices calls\): expected wait for a slot 400 ms \+ 400 ms to run exceeds the 500 ms left/);
  assert.equal(err.metadata.get("grpc-retry-pushback-ms"), "800");
  for (const r of held) r();
  await Promise.all(running);
  for (const r of held) r();
  await queued;
});

test("adaptive (the default): calls that run out of time shrink their class's limit toward the floor, and it shows as bulkhead_limit", async () => {
  const clock = new FakeScheduler(1_000);
  const next = async (req: UnaryRequest): Promise<UnaryResponse> => {
    if (req.method.name === "GetPrices" && !req.header.has("x-fast")) {
      clock.advance(3_000);
      throw new ConnectError("stock: no answer before the deadline", Code.DeadlineExceeded);
    }
    clock.advance(5);
    return { header: new Headers() } as UnaryResponse;
  };
  const cfg = { ...config, maxConcurrent: 16, minConcurrent: 2, breaker: { ...config.breaker, volumeThreshold: 100_000 } };
  const intercepted = isolationInterceptor("stock-adaptive", cfg, 0, { clock, scheduler: clock })(next as never);
  for (let i = 0; i < 200; i++) await intercepted(read("GetPrices", true)); // 5 ms each: the baseline
  assert.equal(await gauge("bulkhead_limit", { dependency: "stock-adaptive", class: "GetPrices" }), 16, "starts at the ceiling");
  const trace: number[] = [];
  for (let i = 0; i < 30; i++) {
    await intercepted(read("GetPrices")).catch(() => {});
    trace.push((await gauge("bulkhead_limit", { dependency: "stock-adaptive", class: "GetPrices" }))!);
  }
  assert.ok(
    trace.every((x, i) => i === 0 || x <= trace[i - 1]!),
    `only shrinks: ${trace.join(",")}`,
  );
  assert.equal(trace.at(-1), 2, `down to the floor: ${trace.join(",")}`);
  assert.equal(await gauge("bulkhead_latency_seconds", { dependency: "stock-adaptive", class: "GetPrices", window: "recent" }), 3);
  assert.equal(await gauge("bulkhead_latency_seconds", { dependency: "stock-adaptive", class: "GetPrices", window: "baseline" }), 0.005);
  // Fixed limits stay available, and never move.
  const fixed = isolationInterceptor("stock-fixed", { ...cfg, limit: "fixed" }, 0, { clock, scheduler: clock })(next as never);
  for (let i = 0; i < 30; i++) await fixed(read("GetPrices")).catch(() => {});
  assert.equal(await gauge("bulkhead_limit", { dependency: "stock-fixed", class: "GetPrices" }), 16);
});

test("through the outbound interceptor: a dependency's own failures open its breaker; failures it reports from further down do not, and keep their mark", async () => {
  let answer: () => never = () => {
    throw new ConnectError("orders-db: database unavailable", Code.Unavailable);
  };
  const transport = createRouterTransport((router) => router.service(Counter, { get: () => answer(), async *count() {} } as never), {
    transport: {
      interceptors: [isolationInterceptor("orders-chain", config, 0), outboundInterceptor({ dependency: "orders-chain", hopReserveMs: 5, minBudgetMs: 10 })],
    },
  });
  const client = createClient(Counter, transport) as unknown as { get(req: object): Promise<unknown> };
  const breakerState = () => gauge("circuit_breaker_state", { dependency: "orders-chain", method: "Get" });
  const failures = async (n: number) => {
    const errs: ConnectError[] = [];
    for (let i = 0; i < n; i++)
      errs.push(
        await client.get({}).then(
          () => assert.fail("no answer expected"),
          (e: unknown) => ConnectError.from(e),
        ),
      );
    return errs;
  };
  // orders reports pricing's failure (marked by orders' own mapping, as it would be on the wire).
  answer = () => {
    throw new ConnectError("pricing: pricing-db: database unavailable", Code.Unavailable, { "x-failed-dependency": "pricing" });
  };
  const reported = await failures(20);
  assert.equal(await breakerState(), 0, "closed: orders answered, pricing failed");
  assert.deepEqual(new Set(reported.map((e) => e.metadata.get("x-failed-dependency"))), new Set(["pricing"]), "the mark names where it began");
  // orders' own failure: this hop marks it with orders' name, and it counts.
  answer = () => {
    throw new ConnectError("orders-db: database unavailable", Code.Unavailable);
  };
  const own = await failures(40);
  assert.equal(await breakerState(), 2, "open after orders' own failures");
  assert.equal(own[0]!.metadata.get("x-failed-dependency"), "orders-chain");
  assert.match(own.at(-1)!.rawMessage, /orders-chain\.Get: circuit open/);
});

test("calls overdue because the dependency waits out a restart are parked in this server's admission, and new ones too; a stall parks nothing", async () => {
  for (const waitingFor of ["pricing-db", undefined]) {
    const clock = new FakeScheduler(1_000);
    let parked = 0;
    let unparked = 0;
    const scope = (): CallScope => ({
      deadlineAt: clock.now() + 3_000,
      clock,
      signal: new AbortController().signal,
      requestId: "r",
      procedure: "/x.v1.X/Y",
      park: () => {
        parked++;
        return () => void unparked++;
      },
    });
    const hanging: (() => void)[] = [];
    let hang = false;
    const next = (): Promise<UnaryResponse> => {
      if (!hang) return Promise.resolve({ header: new Headers() } as UnaryResponse);
      return new Promise((resolve) => hanging.push(() => resolve({ header: new Headers() } as UnaryResponse)));
    };
    const health = { serving: async () => false, waitingFor: async () => waitingFor };
    const intercepted = isolationInterceptor(
      `orders-restart-${waitingFor ?? "none"}`,
      { ...config, maxConcurrent: 8 },
      0,
      { clock, scheduler: clock },
      health,
    )(next as never);
    const flush = () => new Promise((r) => setImmediate(r));
    // History: quick calls, 5 ms each.
    for (let i = 0; i < 20; i++) {
      const p = runInScope(scope(), () => intercepted(call("CreateOrder")));
      clock.advance(5);
      await p;
    }
    assert.equal(parked, 0, "nothing is parked in normal service");
    hang = true;
    const calls = Array.from({ length: 3 }, () => runInScope(scope(), () => intercepted(call("CreateOrder"))));
    for (let t = 0; t < 400; t += 25) {
      clock.advance(25);
      await flush();
    }
    const late = runInScope(scope(), () => intercepted(call("CreateOrder")));
    await flush();
    if (waitingFor !== undefined) {
      assert.equal(parked, 4, "the three overdue calls, and the one that came while the dependency restarts");
    } else {
      assert.equal(parked, 0, "a stall parks nothing: admission keeps counting those calls");
    }
    for (const h of hanging.splice(0)) h();
    await Promise.all([...calls, late]);
    assert.equal(unparked, parked, "each parking ends with its call");
  }
});

test("an answer that says it waited out a restart below is no latency sample, and marks this hop's own request", async () => {
  const clock = new FakeScheduler(1_000);
  const next = async (req: UnaryRequest): Promise<UnaryResponse> => {
    if (req.header.has("x-fast")) {
      clock.advance(5);
      return { header: new Headers() } as UnaryResponse;
    }
    // Two seconds at a reconnect gate further down, then served (or refused) all the same.
    clock.advance(2_000);
    if (req.method.name === "GetPrices") return { header: new Headers({ "x-waited-out-restart": "1" }) } as UnaryResponse;
    throw new ConnectError("pricing-db: database unavailable", Code.Unavailable, { "x-waited-out-restart": "1" });
  };
  const cfg = { ...config, maxConcurrent: 16, minConcurrent: 2, methodClasses: { ListProducts: "GetPrices" } };
  const intercepted = isolationInterceptor("pricing-restart", cfg, 0, { clock, scheduler: clock })(next as never);
  for (let i = 0; i < 200; i++) await intercepted(read("GetPrices", true));
  const latency = () => gauge("bulkhead_latency_seconds", { dependency: "pricing-restart", class: "GetPrices", window: "recent" });
  assert.equal(await latency(), 0.005);
  const mark = { waitedOutRestart: false };
  const scope = { ...scopeUntil(clock, clock.now() + 10_000), restartMark: mark };
  await runInScope(scope, () => intercepted(read("GetPrices")));
  assert.equal(mark.waitedOutRestart, true, "this hop's answer will say so too");
  const refused = await runInScope({ ...scope, deadlineAt: clock.now() + 10_000 }, () => intercepted(read("ListProducts"))).catch((e: unknown) =>
    ConnectError.from(e),
  );
  assert.ok(refused instanceof ConnectError && refused.code === Code.Unavailable);
  assert.equal(await latency(), 0.005, "two seconds waited out a restart: not the dependency's latency");
  assert.equal(await gauge("bulkhead_limit", { dependency: "pricing-restart", class: "GetPrices" }), 16);
});
