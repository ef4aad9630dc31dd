import pg from "pg";
import type { LabPlatform } from "./platform/lab-platform.js";
import { openWatchers } from "./streams/watchers.js";

export interface ScenarioTiming {
  /** Steady load before the trigger. */
  preMs: number;
  /** How long the trigger lasts. */
  triggerMs: number;
  /** Steady load after it: does goodput come back? */
  postMs: number;
}

/** What is done to the platform when the trigger starts and ends (load changes are in `load`). */
export interface Trigger {
  start(p: LabPlatform): Promise<void>;
  stop(p: LabPlatform): Promise<void>;
}

export interface Scenario {
  name: string;
  title: string;
  /** One line for the docs and the report: what happens. */
  summary: string;
  timing: { full: ScenarioTiming; quick: ScenarioTiming };
  /** Offered rate (new user operations per second) as multiples of the measured capacity: before and after the trigger, and during it. */
  load: { base: number; during: number };
  /**
   * Quick mode (npm test) only: offered requests per second, before/after
   * and during the trigger, instead of fractions of a measured capacity.
   * For scenarios whose claims are counts per request (the full outage's
   * attempts, the outbox's exactly-once) and hold at any rate below
   * capacity: such a run measures no capacity, needs no warm-up, and may
   * run beside the others (storm.ts, `sideBySide`).
   */
  quickRates?: { base: number; during: number };
  trigger?: Trigger;
  /**
   * Attribute the work at every hop to the user request that caused it
   * (request logs at debug level, read once the platform is quiet), for the
   * requests sent in the first part of the trigger whose whole retry chain
   * fits inside it: sent no later than `chainMs` before the trigger ends.
   */
  attribution?: { chainMs: Record<"naive" | "platform", Record<"placeOrder" | "listProducts" | "getOrder", number>> };
  /**
   * Read the services' request and transaction logs (debug level) to count
   * database work that ended after its user had given up. Implied by
   * `attribution`.
   */
  logWork?: boolean;
  /**
   * The trigger's length for the platform's runs, when it differs: the full
   * outage has to outlast the naive retry chain (about 24 s), the platform's
   * chain is one user's patience (2 s); a shorter outage measures it as well
   * and keeps the lab within its time.
   */
  platformTriggerMs?: { full: number; quick: number };
  /** Not used to tune anything in the platform or the lab: the held-out check. */
  heldOut?: boolean;
  /** Tries per user here, when not the lab's (the same for every profile). */
  maxTries?: number;
  /**
   * Each variant's rates are fractions of its own capacity, measured at the
   * start of its own run, instead of the scenario's first run's. For the
   * stories told relative to capacity (overload, metastable): the naive
   * stack does less per request than the platform and serves about 1.4x its
   * requests per second, so 1.5x the platform's capacity would be barely
   * over the naive stack's.
   */
  sizedPerVariant?: boolean;
  /**
   * Which capacity the rates are fractions of. "closed-loop" (the default):
   * successful requests per second of 64 closed-loop users. "open-loop":
   * the highest rate an open loop had served within the users' patience,
   * stepped up from the closed loop's rate until the stack fell behind
   * (lab/capacity.ts). The closed loop understates what a stack with
   * unbounded queues serves to an open loop: sized from it, "1.5x" was at
   * times no overload at all.
   */
  capacityFrom?: "closed-loop" | "open-loop";
  /**
   * The trigger must overload the stack for the run to say anything: the
   * run checks it from its own data (analyze.ts, `overload`), and a run
   * whose trigger did not is marked invalid instead of showing a recovery.
   */
  mustOverload?: boolean;
  /**
   * The outbox check: once the load is done, wait (at most this long) for
   * the receipts queue to drain, then count every order's receipt and what
   * the mailer sent (lab/receipts/receipt-counts.ts).
   */
  receipts?: { maxDrainMs: { full: number; quick: number } };
  /** Extra environment for every service in this scenario's runs, per mode. */
  env?: { full?: Record<string, string>; quick?: Record<string, string> };
  /** Only these profiles run it (default: both). */
  profiles?: readonly ("naive" | "platform")[];
}

const noop = async () => {};

/** WatchOrder streams open in normal times, for the watchers scenario: about one per order of the last few seconds at 0.6x capacity. */
const usualWatchers = 60;

/** Both databases behind pricing and orders: they share the one PostgreSQL. */
const databaseServices = ["pricing", "orders"] as const;

/**
 * Every scenario has the same windows before and after its trigger, so
 * that baselines and recoveries are measured alike. The quick variant (the
 * test) shortens them.
 */
const pre = { full: 4000, quick: 3000 };
const post = { full: 8000, quick: 6000 };
const timing = (triggerFull: number, triggerQuick: number) => ({
  full: { preMs: pre.full, triggerMs: triggerFull, postMs: post.full },
  quick: { preMs: pre.quick, triggerMs: triggerQuick, postMs: post.quick },
});

/**
 * The naive stack's retry chains, from its code: 3 attempts with 200 + 400
 * ms of backoff at every hop. A write goes gateway -> checkout -> orders ->
 * pricing -> pricing's database: 0.6 + 3 x (0.6 + 3 x (0.6 + 3 x 0.6)) = 24 s;
 * a catalogue read skips orders: 0.6 + 3 x (0.6 + 3 x 0.6) = 7.8 s. Plus a
 * margin for the queueing the storm itself causes.
 */
const naiveChainMs = { placeOrder: 26_000, listProducts: 9000, getOrder: 9000 };

export const scenarios: readonly Scenario[] = [
  {
    name: "failover",
    title: "1. Failover: the database is down for under 2 s",
    summary:
      "PostgreSQL (pricing's and orders' database) is stopped with a fast shutdown under steady load (0.6x capacity) and started again on the same data and port 1.5 s later.",
    timing: timing(1500, 1500),
    load: { base: 0.6, during: 0.6 },
    trigger: { start: (p) => p.stopDatabase(), stop: (p) => p.startDatabase() },
  },
  {
    name: "slow-query",
    title: "2. Slow query: pricing's statements go from milliseconds to 2 s",
    summary:
      "Every pricing transaction runs pg_sleep(2) on the server when it starts (db.latencyMs 2000 on pricing) under steady load (0.6x capacity); the user gives up after 2 s.",
    timing: timing(6000, 4000),
    load: { base: 0.6, during: 0.6 },
    trigger: {
      start: (p) => p.setFaults("pricing", { db: { latencyMs: 2000 } }),
      stop: (p) => p.setFaults("pricing", {}),
    },
    logWork: true,
  },
  {
    name: "overload",
    title: "3. Overload: 1.5x capacity",
    summary: "Offered load goes from 0.6x the measured capacity to 1.5x for the trigger window, then back.",
    timing: timing(8000, 5000),
    load: { base: 0.6, during: 1.5 },
    trigger: { start: noop, stop: noop },
    sizedPerVariant: true,
  },
  {
    name: "metastable",
    title: "4. Metastable: a spike over capacity, then normal load, with users who try again",
    summary:
      "Normal load (0.6x the open-loop capacity), a 15 s spike to 1.5x, then normal load again. Users who time out or get an error try again (3 tries): goodput must come back by itself once the spike is gone. Valid only if the spike overloaded the stack.",
    // At 1.5x an unbounded queue grows by half the capacity per second: after 4 s a request waits
    // the users' 2 s and their retries take over; 15 s leaves no doubt. Quick: 6 s, enough for that.
    // The window after it as long as full (8 s, not the quick 6 s) in both: in npm test each run has
    // one core (StormOptions.splitCores), where the platform's intake controller, cut by the spike,
    // needs some seconds of steps to readmit the normal load.
    timing: { full: { preMs: pre.full, triggerMs: 15_000, postMs: post.full }, quick: { preMs: pre.quick, triggerMs: 6000, postMs: post.full } },
    load: { base: 0.6, during: 1.5 },
    trigger: { start: noop, stop: noop },
    sizedPerVariant: true,
    capacityFrom: "open-loop",
    mustOverload: true,
  },
  {
    name: "full-outage",
    title: "5. Full outage: every pricing statement fails, for longer than the naive retry chain",
    summary:
      "Every pricing transaction fails on the server (db.errorRate 1 on pricing) under steady load (0.15x capacity, users who try once), for 32 s with the naive stack (longer than its retry chain, about 24 s for a write) and 12 s with the platform. Database attempts and attempts at every hop are counted per user request from the services' own logs, until the platform is quiet.",
    // Quick: long enough for the platform and a naive read chain (~8 s); a naive write chain does not fit (the test says so).
    timing: timing(32_000, 14_000),
    platformTriggerMs: { full: 12_000, quick: 8000 },
    // Low on purpose, and users who try once: a write becomes up to 81 database attempts in the
    // naive stack, and at higher rates the outage turns into an overload whose queueing stretches
    // each chain past the outage. Each try is a request whose work is counted on its own, so a
    // user's further tries would add requests, not change what one costs.
    load: { base: 0.15, during: 0.15 },
    // Quick: 10 req/s, with no warm-up before it. The budget's claim is per request: the reserve
    // and what the seconds before the outage banked are spread over the requests attributed, so
    // fewer requests loosen the bound and a warm-up's requests (10% of them banked) loosen it
    // more. At 10 req/s without a warm-up the bound is about 1.6 per request (the capacity-sized
    // 18 req/s with its warm-up gave 1.8), and it still attributes some 55 requests (20 reads in
    // the naive run), at a third of the naive storm's cost.
    quickRates: { base: 10, during: 10 },
    maxTries: 1,
    trigger: {
      start: (p) => p.setFaults("pricing", { db: { errorRate: 1 } }),
      stop: (p) => p.setFaults("pricing", {}),
    },
    // The platform's chain: the gateway's attempts within one try's 2 s, plus its reserve.
    attribution: { chainMs: { naive: naiveChainMs, platform: { placeOrder: 2500, listProducts: 2500, getOrder: 2500 } } },
  },
  {
    name: "slow-dependency",
    title: "6. Slow dependency: pricing's table locked (held out)",
    summary:
      "A superuser connection holds LOCK TABLE pricing.products IN ACCESS EXCLUSIVE MODE under steady load (0.6x capacity): every pricing statement waits. GetOrder never needs pricing; its goodput is the isolation at work (docs/isolation.md). Held out: nothing in the platform or the lab was tuned on it.",
    timing: timing(6000, 4000),
    load: { base: 0.6, during: 0.6 },
    trigger: lockTable("pricing.products"),
    logWork: true,
    heldOut: true,
  },
  {
    name: "receipts-outage",
    title: "7. Receipts: the mailer is down for a minute, orders keep coming",
    summary:
      "The receipts worker's dependency (the mailer) answers every call UNAVAILABLE (handler.errorRate 1 on mailer) for 60 s (8 s in quick mode) under steady load (0.6x capacity). Orders queue their receipts in their own transaction and never wait for them: PlaceOrder's success and latency should not move. After the mailer recovers, every receipt of the run must be sent, once (docs/outbox.md).",
    timing: timing(60_000, 8000),
    load: { base: 0.6, during: 0.6 },
    // Quick: 10 req/s (some 30 orders during the 8 s outage). Exactly-once and "orders do not
    // wait for receipts" are claims per order and per user, not about how close to capacity.
    quickRates: { base: 10, during: 10 },
    trigger: {
      start: (p) => p.setFaults("mailer", { handler: { errorRate: 1 } }),
      stop: (p) => p.setFaults("mailer", {}),
    },
    // The worker's backoff ceiling (60 s as shipped): a receipt that failed late in the outage
    // waits up to that after it. Quick mode lowers it to fit the test's time.
    env: { quick: { RECEIPTS_BACKOFF_CAP_MS: "4000" } },
    receipts: { maxDrainMs: { full: 120_000, quick: 30_000 } },
    // The outbox is the same code in both profiles: the naive run would repeat the platform's.
    profiles: ["platform"],
  },
  {
    name: "watchers",
    title: "8. Watchers: 5x the usual WatchOrder streams during normal load",
    summary: `Under steady load (0.6x capacity), ${5 * usualWatchers} WatchOrder streams (5x the usual ${usualWatchers}) are opened through the gateway, 25 at a time, and held open, idle, for the trigger window. Unary goodput must not move: the platform's streams take slots of their own class at every hop (beyond its limit per caller, 100, they are refused with pushback) (docs/streams.md).`,
    timing: timing(8000, 6000),
    load: { base: 0.6, during: 0.6 },
    trigger: openWatchers(5 * usualWatchers),
  },
];

/** A real slowdown: a transaction holding an ACCESS EXCLUSIVE lock on `table`, released at stop. */
function lockTable(table: string): Trigger {
  let holder: pg.Client | undefined;
  return {
    async start(p) {
      holder = new pg.Client({ connectionString: p.databaseUrl });
      await holder.connect();
      await holder.query("BEGIN");
      await holder.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
    },
    async stop() {
      const h = holder;
      holder = undefined;
      if (h === undefined) return;
      await h.query("ROLLBACK").catch(() => {});
      await h.end();
    },
  };
}

/** Failover by fault injection instead of a real stop: both database clients refuse to connect. */
export const failoverByFault: Trigger = {
  start: async (p) => {
    await Promise.all(databaseServices.map((s) => p.setFaults(s, { db: { unreachable: true } })));
  },
  stop: async (p) => {
    await Promise.all(databaseServices.map((s) => p.setFaults(s, {})));
  },
};

/** Offered rates are fixed (req/s) in this mode: nothing is sized from a capacity. */
export function hasFixedRates(s: Scenario, quick: boolean): boolean {
  return quick && s.quickRates !== undefined;
}

/** The scenario's windows for one profile, full or quick. */
export function timingOf(s: Scenario, profile: "naive" | "platform", quick: boolean): ScenarioTiming {
  const t = quick ? s.timing.quick : s.timing.full;
  const own = profile === "platform" ? s.platformTriggerMs?.[quick ? "quick" : "full"] : undefined;
  return own === undefined ? t : { ...t, triggerMs: own };
}

export function scenarioNamed(name: string): Scenario {
  const s = scenarios.find((x) => x.name === name);
  if (!s) throw new Error(`unknown scenario "${name}" (expected one of ${scenarios.map((x) => x.name).join(", ")})`);
  return s;
}
