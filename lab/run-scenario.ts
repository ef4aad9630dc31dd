import { randomBytes } from "node:crypto";
import { measureCapacity, type OpenLoopCapacity } from "./capacity.js";
import { chainServices as serviceNames } from "./chain.js";
import { DatabaseObserver, type LateStatements, type OrderCounts } from "./db/database-observer.js";
import { defaultMix, runLoad } from "./load/run-load.js";
import type { LoadResult } from "./load/protocol.js";
import { MetricsRecorder } from "./metrics/scraper.js";
import { attribute, transactionsAfterCallerLeft, workByRequest, type Attribution } from "./attribution.js";
import { defaultUserModel, type UserModel } from "./load/protocol.js";
import { countReceipts, type ReceiptCounts } from "./receipts/receipt-counts.js";
import { startLabPlatform, type LabPlatform, type Profile } from "./platform/lab-platform.js";
import { failoverByFault, hasFixedRates, timingOf, type Scenario, type ScenarioTiming, type Trigger } from "./scenarios.js";
import type { Variant } from "./variants.js";

export interface RunOptions {
  quick: boolean;
  /** The user's patience (each call's deadline; the call is abandoned after it). */
  clientTimeoutMs: number;
  /** Rates are fractions of this (req/s); when absent, of the capacity measured in this run. */
  referenceCapacity?: number;
  /** Measure capacity even when a reference is given (for the report). Default true. */
  measureCapacity?: boolean;
  /** "stop": stop and restart the real PostgreSQL; "fault": db.unreachable on pricing and orders. */
  failover: "stop" | "fault";
  /**
   * Awaited once the platform is up, before anything is sent to it: runs
   * side by side start their load together, after every platform's start
   * (a start is seconds of CPU that would land on a neighbour's windows).
   */
  platformsReady?: () => Promise<void>;
  /**
   * Awaited before the load starts (its process is ready by then): a naive
   * run side by side starts only once its neighbours are done (storm.ts).
   */
  loadNotBefore?: Promise<void>;
  /** Services from their build (`npm run build` first) or their sources through tsx. Default: "source". */
  from?: "build" | "source";
  /** Pin the run's platform and load processes to these cores (taskset's list): storm.ts, `splitCores`. */
  cpus?: string;
  /** The users (the same for every profile); patience is clientTimeoutMs. Default: defaultUserModel. */
  user?: Omit<UserModel, "patienceMs">;
  log(line: string): void;
}

/** Outcomes are bucketed by send time at this resolution (recovery is found to the bucket). */
export const bucketMs = 250;

export interface CapacityMeasurement {
  /** Successful requests/s of a closed loop at `concurrency` users, measured in this run. */
  measuredPerSec: number;
  /** The open-loop staircase's result (scenarios sized from it: `capacityFrom: "open-loop"`). */
  openLoop?: OpenLoopCapacity;
  /** What the scenario's rates are fractions of. */
  referencePerSec: number;
  concurrency: number;
  durationMs: number;
  /**
   * Requests the lab itself sent before the scenario's load (warm-up and
   * capacity loops). The gateway's retry budget earns 10% of them for its
   * TTL (10 s), so a check of the budget must count them.
   */
  requestsBefore: number;
}

/** Everything a run observed; analyze.ts turns it into numbers. */
export interface RawRun {
  scenario: Scenario;
  profile: Profile;
  variant: Variant;
  quick: boolean;
  clientTimeoutMs: number;
  timing: ScenarioTiming;
  capacity: CapacityMeasurement;
  rates: { base: number; during: number };
  customerPrefix: string;
  load: LoadResult;
  recorder: MetricsRecorder;
  marks: {
    /** Epoch ms: trigger applied (start of its action) and removed (end of its action). */
    triggerOnAt: number;
    triggerOffAt: number;
    /** Every user's call had ended by then (last send + client timeout). */
    usersGoneAt: number;
    /** Last scrape: the platform was quiet then, or the settle time ran out. */
    endAt: number;
    settled: boolean;
  };
  longStatements: LateStatements;
  orders: OrderCounts;
  /** Service processes that exited during the run (the launcher restarted them). */
  serviceExits: string[];
  /** Work per user request, from the services' logs (scenarios with `attribution` only). */
  attribution?: Attribution;
  /** Transactions that ended more than 0.25 s after their user gave up, from the logs (scenarios that read them). */
  transactionsAfterCallerLeft?: number;
  /** Every order's receipt, once the queue drained (scenarios with `receipts` only). */
  receipts?: ReceiptCounts;
  user: Omit<UserModel, "patienceMs">;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, Math.max(0, ms)));

function targets(p: LabPlatform) {
  return serviceNames.map((name) => ({ name, adminUrl: p.services[name].adminUrl }));
}

/** Waits until no RPC is in flight anywhere and no database connection is in use (twice in a row), bounded. */
async function waitQuiet(recorder: MetricsRecorder, maxMs: number): Promise<boolean> {
  const until = Date.now() + maxMs;
  let quietInARow = 0;
  while (Date.now() < until) {
    const snap = await recorder.scrapeNow();
    const complete = serviceNames.every((s) => snap.services[s] !== undefined);
    const busy = recorder.latestSum("rpc_server_in_flight") + recorder.latestSum("db_pool_connections", { state: "in_use" });
    quietInARow = complete && busy === 0 ? quietInARow + 1 : 0;
    if (quietInARow >= 2) return true;
    await sleep(250);
  }
  return false;
}

/** The run's pin (RunOptions.cpus), for the platform's and each load's options. */
const pinnedAs = (opts: RunOptions) => (opts.cpus === undefined ? {} : { cpus: opts.cpus });

/**
 * One scenario for one profile on a fresh platform: warm up, measure
 * capacity (closed loop, and open loop where the scenario is sized from
 * it), then open-loop load from a separate process with
 * the trigger applied and removed on schedule, scraping every service's
 * metrics and watching the database throughout.
 */
export async function runScenario(scenario: Scenario, variant: Variant, opts: RunOptions): Promise<RawRun> {
  const profile = variant.profile;
  const label = `${scenario.name}/${variant.name}`;
  const timing = timingOf(scenario, profile, opts.quick);
  const tag = `${profile}-${randomBytes(4).toString("hex")}`;
  const started = performance.now();
  const base = opts.user ?? {
    maxTries: defaultUserModel.maxTries,
    errorPauseMs: defaultUserModel.errorPauseMs,
    honourRetryAfter: defaultUserModel.honourRetryAfter,
    maxRetryAfterMs: defaultUserModel.maxRetryAfterMs,
  };
  const user = scenario.maxTries === undefined ? base : { ...base, maxTries: scenario.maxTries };
  // Request logs (and the database's per-transaction lines) only where work is attributed per request: they cost CPU.
  const readsLogs = scenario.attribution !== undefined || scenario.logWork === true;
  // A run that fails to start still arrives at the barrier (finally), so that its neighbours go on.
  let p: LabPlatform;
  let upMs = 0;
  try {
    p = await startLabPlatform(profile, {
      from: opts.from ?? "source",
      env: { ...variant.env, ...scenario.env?.[opts.quick ? "quick" : "full"] },
      ...(readsLogs ? { logLevel: "debug" } : {}),
      ...pinnedAs(opts),
    });
    upMs = performance.now() - started;
  } finally {
    await opts.platformsReady?.();
  }
  opts.log(`  ${label}: platform up in ${(upMs / 1000).toFixed(1)} s`);
  const fixed = hasFixedRates(scenario, opts.quick) ? scenario.quickRates : undefined;
  let raw: RawRun | undefined;
  let watchers: { recorder: MetricsRecorder; observer: DatabaseObserver } | undefined;
  let readAttribution: (() => void) | undefined;
  try {
    // Fixed rates size nothing from a capacity: no warm-up, no measurement (and no warm-up
    // requests banked by the gateway's retry budget).
    const skip = opts.measureCapacity === false && opts.referenceCapacity !== undefined;
    const openLoop = scenario.capacityFrom === "open-loop";
    const cap = fixed
      ? { closedPerSec: Number.NaN, concurrency: 0, durationMs: 0, requestsBefore: 0 }
      : await measureCapacity({ gatewayUrl: p.gatewayUrl, quick: opts.quick, clientTimeoutMs: opts.clientTimeoutMs, skip, openLoop, pin: pinnedAs(opts), tag });
    const measuredReference = openLoop ? (cap.openLoop?.perSec ?? Number.NaN) : cap.closedPerSec;
    const reference = fixed ? Number.NaN : (opts.referenceCapacity ?? measuredReference);
    if (!fixed && !(reference > 0)) throw new Error(`${profile}: measured capacity is 0 req/s; is the platform serving?`);
    const rates = fixed ?? { base: scenario.load.base * reference, during: scenario.load.during * reference };
    const stairs = cap.openLoop;
    const stepped = stairs
      ? `; open loop ${stairs.perSec.toFixed(0)} req/s (${stairs.behindAt ? `behind at ${stairs.behindAt.rate.toFixed(0)} req/s sent: ${stairs.behindAt.reason}` : `kept up with every step, up to ${stairs.topRatePerSec.toFixed(0)} req/s`})`
      : "";
    const measured = Number.isNaN(cap.closedPerSec) ? "not measured" : `${cap.closedPerSec.toFixed(0)} req/s (closed loop, ${cap.concurrency} users)${stepped}`;
    opts.log(
      `  ${label}: ${fixed ? "fixed rates" : `capacity ${measured}, reference ${reference.toFixed(0)} req/s`}; offered ${rates.base.toFixed(0)} -> ${rates.during.toFixed(0)} -> ${rates.base.toFixed(0)} req/s`,
    );

    // The load process loads its code and opens its connections while the platform finishes the
    // measurement's work; its schedule starts once both are done (and its neighbours, side by side).
    const quiet = waitQuiet(new MetricsRecorder(targets(p)), opts.quick ? 3000 : 10_000);
    const neighbours = opts.loadNotBefore?.then(() => opts.log(`  ${label}: its neighbours are done; load starts`));
    const recorder = new MetricsRecorder(targets(p));
    const observer = new DatabaseObserver(p.databaseUrl, opts.clientTimeoutMs);
    watchers = { recorder, observer };
    const customerPrefix = `storm-${tag}-`;

    let onStart: (startAt: number) => void = () => {};
    const loadStarted = new Promise<number>((resolve) => (onStart = resolve));
    const loadDone = runLoad({
      gatewayUrl: p.gatewayUrl,
      ...pinnedAs(opts),
      mode: {
        kind: "open",
        phases: [
          { durationMs: timing.preMs, rate: rates.base },
          { durationMs: timing.triggerMs, rate: rates.during },
          { durationMs: timing.postMs, rate: rates.base },
        ],
      },
      clientTimeoutMs: opts.clientTimeoutMs,
      user,
      recordTries: readsLogs,
      bucketMs,
      customerPrefix,
      startDelayMs: 300,
      onStart,
      startAfter: Promise.all([quiet, neighbours]),
    });
    // A load failure must not leave the trigger applied: run the schedule either way.
    const loadOutcome = loadDone.then(
      (r) => ({ ok: true as const, r }),
      (e: unknown) => ({ ok: false as const, e }),
    );
    const startAt = await Promise.race([
      loadStarted,
      loadOutcome.then((o) => {
        throw o.ok ? new Error("the load ended before it started") : o.e;
      }),
    ]);
    // After the load process has opened its connections: its few set-up calls are not counted.
    await recorder.scrapeNow();
    recorder.start(1000);
    observer.start();

    const trigger: Trigger | undefined = scenario.name === "failover" && opts.failover === "fault" ? failoverByFault : scenario.trigger;
    // Scrapes run beside the trigger, never before it: a slow /metrics must not delay the schedule.
    await sleep(startAt + timing.preMs - Date.now());
    const before = recorder.scrapeNow();
    const triggerOnAt = Date.now();
    await trigger?.start(p);
    await before;
    await sleep(startAt + timing.preMs + timing.triggerMs - Date.now());
    const during = recorder.scrapeNow();
    await trigger?.stop(p);
    const triggerOffAt = Date.now();
    await during;
    await recorder.scrapeNow();
    opts.log(`  ${label}: trigger applied for ${((triggerOffAt - triggerOnAt) / 1000).toFixed(1)} s`);

    const outcome = await loadOutcome;
    if (!outcome.ok) throw outcome.e;
    const load = outcome.r;
    // The load process reports once its last user has left (last try ended).
    const usersGoneAt = Math.max(load.endedAt, startAt + load.scheduledMs);
    await recorder.scrapeNow();
    await recorder.stop();
    // Work still going on now is work for users who have all left. Where
    // work is attributed per request, wait for it all: a naive retry chain
    // goes on long after its user left.
    // A bound on a wait for an event (a quiet platform ends it at once), not a sleep: where work is
    // attributed, quick mode allows nearly as long as the full lab, since a starved machine (or the
    // runs beside this one) stretches a naive chain well past its 9 s (12 s left 7.5 of 27 counted).
    // Elsewhere quick mode allows one patience more: every try has passed its deadline by then (no
    // try starts after the schedule), so the platform's work for it is over; a naive stack's
    // retry chains are not, and a few seconds more never saw them end (the warning says so).
    const settleMs = scenario.attribution ? (opts.quick ? 30_000 : 40_000) : opts.quick ? opts.clientTimeoutMs : 12_000;
    const settled = await waitQuiet(recorder, settleMs);
    const endAt = Date.now();
    observer.stop();
    const longStatements = observer.lateStatements();
    const orders = await observer.orderCounts(customerPrefix, load.failedOrderCustomers);
    await observer.close();
    const receipts = scenario.receipts
      ? await countReceipts({
          databaseUrl: p.databaseUrl,
          mailerAdminUrl: p.services.mailer.adminUrl,
          customerPrefix,
          triggerOffAt,
          maxWaitMs: scenario.receipts.maxDrainMs[opts.quick ? "quick" : "full"],
        })
      : undefined;
    if (receipts) {
      opts.log(
        `  ${label}: receipts ${receipts.sent}/${receipts.orders} sent (${receipts.pending} pending, ${receipts.failed} failed), mailer sent ${receipts.mailerSent} for ${receipts.sentInDatabase} in the database${receipts.drainedAfterSec === null ? "; not drained in time" : `; drained ${receipts.drainedAfterSec} s after recovery`}`,
      );
    }
    const cutShort = load.cutShort > 0 ? `; ${load.cutShort} users had tries left when the schedule ended` : "";
    opts.log(`  ${label}: ${load.sent} requests sent, ${load.succeeded} succeeded${cutShort}${settled ? "" : "; still busy when the settle time ran out"}`);
    for (const e of p.exits) opts.log(`  ${label}: ${e}`);
    if (readsLogs && load.tries) {
      const tries = load.tries;
      const attribution = scenario.attribution;
      const chain = attribution?.chainMs[profile];
      const offMs = triggerOffAt - startAt;
      const fromMs = triggerOnAt - startAt;
      readAttribution = () => {
        if (!raw) return;
        const work = workByRequest(p.logFiles, customerPrefix);
        raw.transactionsAfterCallerLeft = transactionsAfterCallerLeft(tries, work, startAt, opts.clientTimeoutMs);
        // Only requests whose whole retry chain fits inside the trigger: every attempt they cause meets the outage.
        if (chain)
          raw.attribution = attribute(
            tries,
            work,
            fromMs,
            { placeOrder: offMs - chain.placeOrder, listProducts: offMs - chain.listProducts, getOrder: offMs - chain.getOrder },
            defaultMix,
          );
      };
    }
    raw = {
      scenario,
      profile,
      variant,
      user,
      quick: opts.quick,
      clientTimeoutMs: opts.clientTimeoutMs,
      timing,
      capacity: {
        measuredPerSec: cap.closedPerSec,
        ...(cap.openLoop ? { openLoop: cap.openLoop } : {}),
        referencePerSec: reference,
        concurrency: cap.concurrency,
        durationMs: cap.durationMs,
        requestsBefore: cap.requestsBefore,
      },
      rates,
      customerPrefix,
      load,
      recorder,
      marks: { triggerOnAt, triggerOffAt, usersGoneAt, endAt, settled },
      longStatements,
      orders,
      ...(receipts ? { receipts } : {}),
      serviceExits: [...p.exits],
    };
    return raw;
  } finally {
    // A run that failed midway (a fault that could not be set) must not leave the scrape
    // interval or the database sampler behind: either would keep the process alive for ever.
    await watchers?.recorder.stop();
    await watchers?.observer.close().catch(() => {});
    // Never leave a fault behind (the platform is thrown away anyway, but a stop can take a while);
    // a platform that is killed keeps none (and a backlogged one answers its admin port slowly).
    if (readsLogs) await p.clearAllFaults().catch(() => {});
    // The logs are complete once the services have exited. A run that reads no logs has all its
    // evidence by now: its services are killed rather than drained (a naive backlog took 36 s).
    await p.close(readAttribution, { drain: readsLogs });
  }
}
