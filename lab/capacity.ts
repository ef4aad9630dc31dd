import type { LoadResult, RatePhase, StopWhenBehind } from "./load/protocol.js";
import { runLoad, type LoadOptions } from "./load/run-load.js";

/**
 * The warm-up before the capacity measurement, ms. Pinned to half the cores
 * (StormOptions.splitCores), twice as long: the JIT's warm-up is CPU time,
 * and with 1.5 s one naive run of fifteen measured 80 req/s, then served 148
 * during its spike.
 */
export function warmupMs(quick: boolean, pinned: boolean): number {
  return (quick ? 1500 : 2500) * (pinned ? 2 : 1);
}

/** Closed-loop users for the capacity measurement: past the knee on 2 cores, below admission limits. */
export const capacityConcurrency = 64;

/** The closed loop's length, ms. */
export const closedLoopMs = (quick: boolean) => (quick ? 2000 : 2500);

/**
 * The open-loop staircase: from `startShare` of the closed-loop capacity,
 * `stepFactor` more every `stepMs`, for at most `steps` steps (up to 4.9x
 * the closed loop's rate: on a shared machine the closed loop can catch a
 * slow moment), until the stack falls behind (`behind`).
 */
export const staircase = {
  startShare: 0.8,
  stepFactor: 1.1,
  stepMs: 1000,
  steps: 20,
  /**
   * Behind: 2% of the tries failed (shed, refused or past patience), or the
   * tries in flight are more than the rate sends in half a patience (they
   * wait that long, on average). Not a much shorter queue: near capacity on
   * a busy machine a request normally takes half a second or more (64
   * closed-loop users at 88 req/s: 0.73 s). Not a longer one: a naive hop
   * retries on its own timeouts (4 s at pricing's database), so a queue of
   * seconds turns the measurement into the storm it is meant to size, and
   * the run after it starts on a backlog. The platform's intake controller
   * judges a 5 s window at a 50% success rate: 2% does not move it.
   */
  behind: (patienceMs: number): StopWhenBehind => ({ failedShare: 0.02, minFailures: 5, queueMs: patienceMs / 2 }),
  /** A step kept up when this share of its requests was served within patience. */
  keptUpShare: 0.98,
};

export function staircasePhases(closedLoopPerSec: number): RatePhase[] {
  return Array.from({ length: staircase.steps }, (_, i) => ({
    durationMs: staircase.stepMs,
    rate: closedLoopPerSec * staircase.startShare * staircase.stepFactor ** i,
  }));
}

export interface OpenLoopCapacity {
  /** The highest rate (req/s) of a step that kept up, before the one in which the stack fell behind. */
  perSec: number;
  /** The rate (req/s) at which the staircase found the stack behind, and why; undefined: it kept up with every step. */
  behindAt?: { rate: number; reason: "failures" | "queue" };
  /** The highest rate sent (req/s, over one step). */
  topRatePerSec: number;
  durationMs: number;
  /** Per step (req/s): sent, served (by send time, within patience), and successes that ended in it. */
  steps: { sent: number; served: number; ended: number }[];
}

/**
 * The open-loop capacity from a staircase's result: the highest rate at
 * which a step's requests were served within the users' patience
 * (`keptUpShare` of them, by send time), among the steps before the one in
 * which the stack fell behind. That step is left out: its arrivals stopped
 * part-way, and the queue then drained them in time. The number leans high
 * for a stack with an unbounded queue, which serves more than it sustains
 * until its queue has grown: with the staircase's 10% a second and half a
 * patience of queue, up to about 1.3x on a steady machine (the queue's wait
 * grows by 0.1 + 0.21 + 0.33 s over the steps above what it sustains).
 * Successes are also counted by the step they ended in (`ended`, in the
 * report's JSON): behind, that count stays near what the stack gets through.
 */
export function openLoopCapacity(load: LoadResult): OpenLoopCapacity {
  const perStep = Math.max(1, Math.round(staircase.stepMs / load.bucketMs));
  const stepSec = (perStep * load.bucketMs) / 1000;
  const steps: OpenLoopCapacity["steps"] = [];
  for (let i = 0; i < load.buckets.length; i += perStep) {
    const bs = load.buckets.slice(i, i + perStep);
    const per = (f: (b: (typeof bs)[number]) => number) => Math.round(bs.reduce((s, b) => s + f(b), 0) / stepSec);
    steps.push({ sent: per((b) => b.sent ?? b.offered), served: per((b) => b.succeeded), ended: per((b) => b.succeededEnded ?? 0) });
  }
  // Whole steps of the schedule, less the one the stack fell behind in.
  const whole = Math.floor(load.scheduledMs / (stepSec * 1000));
  const before = steps.slice(0, load.stoppedBehind ? whole : Math.max(whole, 1));
  const keptUp = before.filter((x) => x.sent > 0 && x.served >= staircase.keptUpShare * x.sent);
  return {
    // Behind from the first step (0.8x the closed loop's rate): what it got through then.
    perSec: keptUp.length > 0 ? Math.max(...keptUp.map((x) => x.served)) : Math.min(steps[0]?.served ?? 0, steps[0]?.ended ?? 0),
    ...(load.stoppedBehind ? { behindAt: load.stoppedBehind } : {}),
    topRatePerSec: Math.max(0, ...steps.map((x) => x.sent)),
    durationMs: load.scheduledMs,
    steps,
  };
}

export interface CapacityOptions {
  gatewayUrl: string;
  quick: boolean;
  clientTimeoutMs: number;
  /** Measure nothing after the warm-up (a reference capacity is given). */
  skip: boolean;
  /** Also step an open loop up from the closed loop's rate (OpenLoopCapacity). */
  openLoop: boolean;
  pin: Pick<LoadOptions, "cpus">;
  tag: string;
}

export interface CapacityResult {
  /** Successful requests per second of `concurrency` closed-loop users over `durationMs`; NaN: not measured. */
  closedPerSec: number;
  concurrency: number;
  durationMs: number;
  openLoop?: OpenLoopCapacity;
  /** Requests sent by the warm-up and the measurements. */
  requestsBefore: number;
}

/**
 * Warm-up, then the closed loop (and, when asked, the open-loop staircase
 * from its rate). Each load's process loads its code while the previous one
 * runs, and its users start right after it.
 */
export async function measureCapacity(o: CapacityOptions): Promise<CapacityResult> {
  // JIT, connection pools and HTTP/2 sessions warm up first, in both profiles
  // alike: a service fresh from start serves at half speed for seconds.
  const common = { gatewayUrl: o.gatewayUrl, ...o.pin, clientTimeoutMs: o.clientTimeoutMs };
  const warming = runLoad({
    ...common,
    // At the measurement's own concurrency: a warm-up at 16 users left the first 64-user seconds ~30% slow.
    mode: { kind: "closed", concurrency: capacityConcurrency, durationMs: warmupMs(o.quick, o.pin.cpus !== undefined) },
    customerPrefix: `warm-${o.tag}-`,
  });
  const concurrency = capacityConcurrency;
  if (o.skip) return { closedPerSec: Number.NaN, concurrency, durationMs: 0, requestsBefore: (await warming).sent };
  const durationMs = closedLoopMs(o.quick);
  const measuring = runLoad({
    ...common,
    mode: { kind: "closed", concurrency, durationMs },
    customerPrefix: `capacity-${o.tag}-`,
    startAfter: warming,
    startDelayMs: 0,
  });
  const closedPerSec = measuring.then((r) => r.succeeded / (durationMs / 1000));
  // One try per user: the staircase measures what the stack serves, not what users do about it.
  const stepping = o.openLoop
    ? runLoad({
        ...common,
        mode: { kind: "open", phases: [], stopWhenBehind: staircase.behind(o.clientTimeoutMs) },
        customerPrefix: `staircase-${o.tag}-`,
        bucketMs: 250,
        startAfter: measuring,
        startDelayMs: 0,
        phasesFrom: closedPerSec.then(staircasePhases),
      })
    : undefined;
  const [warm, closed, stairs] = await Promise.all([warming, measuring, stepping]);
  return {
    closedPerSec: await closedPerSec,
    concurrency,
    durationMs,
    ...(stairs ? { openLoop: openLoopCapacity(stairs) } : {}),
    requestsBefore: warm.sent + closed.sent + (stairs?.sent ?? 0),
  };
}
