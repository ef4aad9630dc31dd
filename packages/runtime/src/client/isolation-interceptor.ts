import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import {
  AdaptiveLimit,
  BreakerProbe,
  Bulkhead,
  CircuitBreaker,
  currentScope,
  localRejection,
  grpcRetryPushbackHeader,
  failedDependencyHeader,
  pushbackHeaders,
  systemClock,
  type Clock,
  type CallScope,
  type Release,
  type ReleaseOutcome,
  type Scheduler,
  type StallKind,
} from "@platform/resilience";
import { noteDependencyRestarting } from "./restart-signal.js";
import { waitedOutRestartHeader } from "../headers.js";
import { isolationMetrics } from "../observability/metrics.js";
import { histogramCellsOf } from "../observability/metric-cells.js";
import { refusalReason, withRefusal } from "@platform/proto/error-details";
import { localRejectionReason } from "../refusals.js";

export interface IsolationConfig {
  /**
   * "adaptive" (the default): each method class's limit follows the latency
   * it observes within [minConcurrent, maxConcurrent] (AdaptiveLimit);
   * "fixed": maxConcurrent, always.
   */
  limit?: "adaptive" | "fixed";
  /** Calls of one method class in flight at once: the adaptive limit's ceiling, or the fixed limit. */
  maxConcurrent: number;
  /** The adaptive limit's floor (default: maxConcurrent / 8, at least 1). */
  minConcurrent?: number;
  /** Calls of one method class waiting for a slot; beyond it, or when the wait cannot fit the deadline, they fail at once. */
  maxQueue: number;
  /**
   * Method name -> class, to let methods share one limiter (e.g. many
   * small, alike ones). Unlisted methods are their own class.
   */
  methodClasses?: Record<string, string>;
  breaker: BreakerConfig;
}

export interface BreakerConfig {
  volumeThreshold: number;
  errorThresholdPercentage: number;
  windowMs: number;
  /** The longest wait of an open breaker before its trial call. */
  resetTimeoutMs: number;
  /** The first wait after it opens, doubled by each failed trial up to resetTimeoutMs (default: resetTimeoutMs, fixed). */
  firstResetMs?: number;
}

/** Test seams; production uses real time. */
export interface IsolationClock {
  clock: Clock;
  scheduler?: Scheduler;
}

/** The health service: a probe's call passes the breakers and bulkheads it serves. */
const healthService = "grpc.health.v1.Health";

/** The dependency's health checks, as seen from here. */
export interface DependencyHealth {
  /** It serves the API called: ready, and what it needs of its own answers (the breakers' probe). */
  serving(): Promise<boolean>;
  /** What it waits out a restart of now, if anything (restart-signal.ts); rejects when it does not answer in time. */
  waitingFor(): Promise<string | undefined>;
}

/**
 * Circuit breakers (one per method) and bulkheads of this dependency's own,
 * one per method class, by default one per method (invariant 6, docs/architecture.md): a slow
 * dependency exhausts only its own slots, a slow method of it only its own
 * (a method stuck behind a slow downstream of the dependency cannot starve
 * another method behind the same dependency, at any hop), and a failing one is
 * cut off quickly instead of being hammered. One HTTP/2 connection would
 * queue silently beyond the server's stream limit; these limiters are what
 * bound it. Every service calls its dependencies through this, so the
 * separation holds at every hop.
 *
 * Each class's slots come from an AdaptiveLimit (by default): when the
 * dependency slows down, the limit shrinks toward what it still serves and
 * the excess is refused at once, with UNAVAILABLE and a pushback hint,
 * instead of waiting for a deadline and filling the hops above.
 *
 * An open breaker refuses before a slot is taken. A bulkhead refusal is our
 * own state, not the dependency's health, so it happens outside the
 * breaker: opossum would count an ignored error as a success and dilute the
 * failure rate until the breaker could never open. Every refusal of ours
 * carries a pushback hint (grpc-retry-pushback-ms, retry-after) and the
 * failed-dependency mark naming this dependency (x-failed-dependency), so
 * that the breakers of the hops above do not count it against us: we
 * answered; `dependency` is the sick one (resilience's failed-dependency.ts).
 *
 * With `health` (the dependency's health check): an open breaker closes as
 * soon as a check says it serves (resilience's breaker-probe.ts); and when
 * a bulkhead's running calls are overdue, the check says whether the
 * dependency waits out a restart (then the calls wait with it, and this
 * process tells its own callers: restart-signal.ts) or has stalled (then
 * the queue is shed: resilience's bulkhead.ts). The check's own call, to
 * grpc.health.v1.Health, passes this interceptor untouched.
 */
export function isolationInterceptor(
  dependency: string,
  config: IsolationConfig,
  reserveMs: number,
  time: IsolationClock = { clock: systemClock },
  health?: DependencyHealth,
): Interceptor {
  const metrics = isolationMetrics();
  // Annotated: a call of it ends the path only for a declared never-returning type.
  const withPushback: (e: unknown) => never = refusalFor(dependency);
  const adaptive = (config.limit ?? "adaptive") === "adaptive";
  const minConcurrent = Math.min(config.maxConcurrent, config.minConcurrent ?? Math.max(1, Math.floor(config.maxConcurrent / 8)));

  // Why this dependency's calls are overdue: asked once for all its bulkheads at a time. A
  // check that gets no answer is inconclusive: a restart believed a moment ago still is (the
  // dependency may be too busy to answer in time), otherwise it is a stall.
  let classifying: Promise<StallKind> | undefined;
  let last: StallKind = "stall";
  // Calls in flight to this dependency. While it waits out a restart they
  // are parked in this server's admission (CallScope.park): waiting uses
  // nothing of this server, and a failover must not fill its admission.
  // Otherwise they count, and admission bounds a slow dependency's callers.
  const inFlight = new Set<ParkableCall>();
  let restartUntil = Number.NEGATIVE_INFINITY;
  const parkForRestart = () => {
    restartUntil = time.clock.now() + restartParkMs;
    for (const c of inFlight) c.unpark ??= c.scope.park?.();
  };
  const classifyStall = health
    ? () =>
        (classifying ??= health
          .waitingFor()
          .then(
            (waitingFor): StallKind => {
              if (waitingFor === undefined) return "stall";
              noteDependencyRestarting(dependency, waitingFor);
              parkForRestart();
              return "restart";
            },
            () => last,
          )
          .then((kind) => (last = kind))
          .finally(() => {
            classifying = undefined;
          }))
    : undefined;
  const classes = new Map<string, Bulkhead>();
  const bulkheadFor = (methodClass: string): Bulkhead => {
    let b = classes.get(methodClass);
    if (b) return b;
    // Starts at the ceiling: a healthy dependency keeps the slots it is
    // given, and the limit leaves them only when latency says so.
    const limiter = adaptive
      ? new AdaptiveLimit({ minLimit: minConcurrent, maxLimit: config.maxConcurrent, initialLimit: config.maxConcurrent, clock: time.clock })
      : undefined;
    const labels = { dependency, class: methodClass };
    const bulkheadWait = histogramCellsOf(metrics.bulkheadWait, ["dependency", "class"]).cell(dependency, methodClass);
    b = new Bulkhead({
      name: `${dependency} (${methodClass} calls)`,
      ...(limiter ? { limiter } : { maxConcurrent: config.maxConcurrent }),
      maxQueue: config.maxQueue,
      clock: time.clock,
      ...(time.scheduler ? { scheduler: time.scheduler } : {}),
      ...(classifyStall ? { classifyStall } : {}),
      onEvent(e) {
        if (e.type === "rejected") metrics.bulkheadRejected.inc({ ...labels, reason: e.reason });
        if (e.type === "stalled") metrics.bulkheadStalls.inc({ ...labels, kind: e.kind });
        if (e.type === "acquired") bulkheadWait.observe(e.waitedMs / 1000);
      },
    });
    const bulkhead = b;
    metrics.watchIsolation({
      dependency,
      methodClass,
      snapshot() {
        const s = bulkhead.stats();
        const l = limiter?.snapshot();
        return { inUse: s.inUse, queued: s.queued, limit: s.maxConcurrent, latencyMs: { recent: l ? l.recentMs : s.serviceMs, baseline: l?.baselineMs ?? 0 } };
      },
    });
    classes.set(methodClass, b);
    return b;
  };

  // One breaker per method of the dependency: a method that fails (a write
  // whose own downstream is down) must not cut off one that works (a read
  // that never needs that downstream).
  const breakers = new Map<string, CircuitBreaker>();
  const prober = health ? new BreakerProbe({ check: health.serving, ...(time.scheduler ? { scheduler: time.scheduler } : {}) }) : undefined;
  const breakerFor = (method: string): CircuitBreaker => {
    let b = breakers.get(method);
    if (b) return b;
    b = new CircuitBreaker({
      name: `${dependency}.${method}`,
      dependency,
      volumeThreshold: config.breaker.volumeThreshold,
      errorThresholdPercentage: config.breaker.errorThresholdPercentage,
      rollingCountTimeout: config.breaker.windowMs,
      resetTimeout: config.breaker.resetTimeoutMs,
      ...(config.breaker.firstResetMs !== undefined ? { firstResetTimeout: config.breaker.firstResetMs } : {}),
      clock: time.clock,
      onEvent(e) {
        if (e.type === "transition") {
          metrics.breakerTransitions.inc({ dependency, method, from: e.from, to: e.to });
          metrics.breakerState.set({ dependency, method }, stateValue[e.to]);
        }
        if (e.type === "rejected") metrics.breakerRejected.inc({ dependency, method });
      },
    });
    metrics.breakerState.set({ dependency, method }, 0);
    breakers.set(method, b);
    prober?.watch(b);
    return b;
  };

  return (next) => async (req) => {
    if (req.service.typeName === healthService) return next(req);
    const breaker = breakerFor(req.method.name);
    const call = () => next(req);
    if (breaker.state() === "open") return breaker.execute(call).catch(withPushback); // refuses at once
    const scope = currentScope();
    const bulkhead = bulkheadFor(classOf(req.method, config.methodClasses));
    const slot = scope ? { deadlineAt: scope.deadlineAt - reserveMs, signal: scope.signal } : {};
    const parkable: ParkableCall | undefined = scope?.park ? { scope } : undefined;
    if (parkable) {
      inFlight.add(parkable);
      if (restartUntil > time.clock.now()) parkable.unpark = parkable.scope.park?.();
    }
    let release: Release | undefined;
    let outcome: ReleaseOutcome = "ignored";
    try {
      // A free slot is taken without a promise; a wait or a refusal goes through acquire().
      release = bulkhead.tryAcquire(slot) ?? (await bulkhead.acquire(slot).catch(withPushback));
      const res = await breaker.execute(call);
      outcome = res.header.has(waitedOutRestartHeader) ? waitedOutRestart(scope) : "ok";
      return res;
    } catch (e) {
      if (release) {
        if (e instanceof ConnectError && e.metadata.has(waitedOutRestartHeader)) outcome = waitedOutRestart(scope);
        else outcome = ranOutOfTime(e, scope?.signal) ? "dropped" : "ignored";
      }
      return withPushback(e);
    } finally {
      release?.(outcome);
      if (parkable) {
        inFlight.delete(parkable);
        parkable.unpark?.();
      }
    }
  };
}

/**
 * The method's class: from the map, else the method itself. Per method by
 * default, rather than reads apart from writes: two reads can be as unlike
 * as a read that needs a slow downstream and a read that does not, and each limit then adapts to one method's latency, not to a mix.
 */
export function classOf(method: { name: string }, methodClasses: Record<string, string> | undefined): string {
  return methodClasses?.[method.name] ?? method.name;
}

/**
 * The dependency answered that the call waited out a restart below it: no
 * latency sample; and this hop's own request did too, so its answer says
 * so to its caller.
 */
function waitedOutRestart(scope: CallScope | undefined): ReleaseOutcome {
  if (scope?.restartMark) scope.restartMark.waitedOutRestart = true;
  return "restart";
}

/**
 * A latency sample for the limit: the call ran out of time (its elapsed
 * time is a lower bound of the latency). Other errors came back with an
 * answer and say nothing about how long the work takes.
 */
function ranOutOfTime(e: unknown, signal: AbortSignal | undefined): boolean {
  if (signal?.aborted && signal.reason === "deadline") return true;
  return ConnectError.from(e).code === Code.DeadlineExceeded;
}

/**
 * Our own refusals (breaker, bulkhead) tell the caller when to come back, if
 * we know, and that they were made for `dependency`: in the pushback headers
 * and as ErrorInfo (its reason) and RetryInfo details (refusals.ts). A rejection handler
 * (`.catch(withPushback)`), made once per dependency, rather than an async
 * wrapper: no extra promise and closure per call on the path that succeeds.
 */
function refusalFor(dependency: string): (e: unknown) => never {
  return (e) => {
    const local = localRejection(e);
    if (local !== undefined && e instanceof ConnectError) {
      const retryAfterMs = local.retryAfterMs === undefined ? undefined : Math.max(1, Math.ceil(local.retryAfterMs));
      if (retryAfterMs !== undefined && !e.metadata.has(grpcRetryPushbackHeader)) {
        for (const [k, v] of Object.entries(pushbackHeaders(retryAfterMs))) e.metadata.set(k, v);
      }
      e.metadata.set(failedDependencyHeader, dependency);
      const reason = localRejectionReason(local.kind);
      if (reason !== undefined && refusalReason(e) === undefined) {
        withRefusal(e, { reason, metadata: { dependency }, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) });
      }
    }
    throw e;
  };
}

const stateValue = { closed: 0, half_open: 1, open: 2 } as const;

/** A call in flight, parked in admission while its dependency waits out a restart. */
interface ParkableCall {
  readonly scope: CallScope;
  unpark?: () => void;
}

/** A dependency said to wait out a restart is believed to for this long: new calls to it are parked meanwhile. */
const restartParkMs = 500;
