import { AsyncLocalStorage } from "node:async_hooks";
import { type Clock, systemClock } from "./clock.js";

/**
 * Everything a unit of work inherits from the request that caused it: the
 * absolute deadline, the signal that fires when the caller goes away, and
 * the ids that travel to downstream calls.
 *
 * The runtime's deadline interceptor creates one scope per inbound request and
 * runs the handler inside it; client interceptors and the database package
 * read it with `currentScope()` so that handlers never pass deadlines by hand.
 */
export interface CallScope {
  /** Absolute deadline on `clock`'s scale. */
  readonly deadlineAt: number;
  readonly clock: Clock;
  /**
   * Aborts when the deadline passes, the caller cancels or disconnects, or
   * the server shuts down. Its `reason` is an `AbortReason`.
   */
  readonly signal: AbortSignal;
  /**
   * Aborts when this hop stops waiting for what it called (its
   * dependencies, its database): a hop reserve before the deadline, so that
   * their failures, named, reach this hop's answer before its deadline
   * does (the runtime's request context arms it). Absent, `signal` is that
   * moment. A caller leaving or a shutdown aborts `signal`, not this: a
   * waiter watches both.
   */
  readonly callsEnd?: AbortSignal;
  /** Correlates log lines across hops; forwarded as `x-request-id`. */
  readonly requestId: string;
  /** Fully qualified procedure that created this scope, e.g. `/stock.v1.StockService/GetLevels`. */
  readonly procedure: string;
  /** How expendable this work is under overload; forwarded to every downstream call. */
  readonly criticality?: "critical" | "sheddable";
  /** Who the edge authenticated; forwarded to every downstream call. */
  readonly caller?: string;
  /** The tenant the edge authenticated the caller for; forwarded to every downstream call. */
  readonly tenant?: string;
  /**
   * Marks the request as waiting out a dependency's restart until the
   * returned function is called: the server's admission control does not
   * count it meanwhile (admission.ts). Set by the runtime for a request it
   * admitted; the database's reconnect wait and the dependency client
   * call it.
   */
  readonly park?: () => () => void;
  /**
   * Where the request records that it waited out a restart below it (its
   * own parking, or a dependency's answer): the runtime's answer then says
   * so to the caller. Set by the runtime for a request it serves.
   */
  readonly restartMark?: { waitedOutRestart: boolean };
}

/** Why a scope's signal aborted. */
export type AbortReason = "deadline" | "cancelled" | "shutdown";

const storage = new AsyncLocalStorage<CallScope>();

/** The scope of the request being served, if any. */
export function currentScope(): CallScope | undefined {
  return storage.getStore();
}

/**
 * Runs `fn` outside any request's scope: for work a request only happened to
 * start (a breaker's probe, a stall check), which must carry none of its
 * deadline, request id or cancellation.
 */
export function runOutsideScope<T>(fn: () => T): T {
  return storage.exit(fn);
}

/** Runs `fn` so that `currentScope()` returns `scope` inside it (and in everything it awaits). */
export function runInScope<T>(scope: CallScope, fn: () => T): T {
  return storage.run(scope, fn);
}

/** Milliseconds left before `scope`'s deadline; negative when it has passed. */
export function remainingMs(scope: CallScope): number {
  return scope.deadlineAt - scope.clock.now();
}

/** The reason a scope aborted, or undefined while it is live. */
export function abortReason(scope: CallScope): AbortReason | undefined {
  if (!scope.signal.aborted) return undefined;
  const reason: unknown = scope.signal.reason;
  return reason === "deadline" || reason === "cancelled" || reason === "shutdown" ? reason : "cancelled";
}

export interface CreateScopeOptions {
  timeoutMs: number;
  requestId: string;
  procedure: string;
  criticality?: "critical" | "sheddable";
  caller?: string;
  tenant?: string;
  /** When the request arrived, on `clock`'s scale; the deadline counts from here. Default: now. */
  startedAt?: number;
  /** Signals whose abort means the caller went away (Connect's `ctx.signal`, shutdown). */
  parentSignals?: AbortSignal[];
  /**
   * A signal that aborts when the deadline passes, armed by whoever owns the
   * request's one deadline timer (the runtime's request context). Given it,
   * the scope arms no timer of its own.
   */
  deadlineSignal?: AbortSignal;
  /** See CallScope.callsEnd. */
  callsEnd?: AbortSignal;
  /** See CallScope.park. */
  park?: () => () => void;
  /** See CallScope.restartMark. */
  restartMark?: { waitedOutRestart: boolean };
  clock?: Clock;
}

/**
 * Creates a scope whose signal aborts with reason "deadline" after
 * `timeoutMs` (on its own timer, or when `deadlineSignal` fires), or with
 * "cancelled"/"shutdown" when a parent signal aborts. `dispose()` clears the
 * timer and unhooks the parents; call it when the request is done.
 */
export function createScope(opts: CreateScopeOptions): CallScope & { dispose(): void } {
  const clock = opts.clock ?? systemClock;
  const controller = new AbortController();
  const deadlineAt = (opts.startedAt ?? clock.now()) + opts.timeoutMs;
  const onDeadline = () => controller.abort("deadline");
  const deadlineSignal = opts.deadlineSignal;
  let timer: ReturnType<typeof setTimeout> | undefined;
  if (deadlineSignal) {
    if (deadlineSignal.aborted) onDeadline();
    else deadlineSignal.addEventListener("abort", onDeadline, { once: true });
  } else {
    timer = setTimeout(onDeadline, Math.max(0, deadlineAt - clock.now()));
    timer.unref?.();
  }
  // A caller whose deadline fires gives up a little before ours does: its
  // timer started earlier (connection set-up, transit, parsing). A caller
  // leaving this close to the deadline left because of it.
  const nearDeadlineAt = deadlineAt - Math.max(50, opts.timeoutMs * 0.1);
  const onParentAbort = (ev: Event) => {
    controller.abort(classifyParentAbort((ev.target as AbortSignal).reason, clock.now() >= nearDeadlineAt));
  };
  for (const s of opts.parentSignals ?? []) {
    if (s.aborted) {
      controller.abort(classifyParentAbort(s.reason, clock.now() >= nearDeadlineAt));
      break;
    }
    s.addEventListener("abort", onParentAbort, { once: true });
  }
  return {
    deadlineAt,
    clock,
    signal: controller.signal,
    callsEnd: opts.callsEnd,
    requestId: opts.requestId,
    procedure: opts.procedure,
    ...(opts.criticality ? { criticality: opts.criticality } : {}),
    ...(opts.caller ? { caller: opts.caller } : {}),
    ...(opts.tenant ? { tenant: opts.tenant } : {}),
    ...(opts.park ? { park: opts.park } : {}),
    ...(opts.restartMark ? { restartMark: opts.restartMark } : {}),
    dispose() {
      clearTimeout(timer);
      deadlineSignal?.removeEventListener("abort", onDeadline);
      for (const s of opts.parentSignals ?? []) s.removeEventListener("abort", onParentAbort);
    },
  };
}

/**
 * A parent signal may abort because of the same deadline (Connect's own
 * timer, armed from the same header a moment earlier than ours), because the
 * caller went away, or because the server is shutting down.
 */
function classifyParentAbort(reason: unknown, pastDeadline: boolean): AbortReason {
  if (reason === "shutdown") return "shutdown";
  // 4 is Code.DeadlineExceeded; compared by value to keep this file free of Connect.
  if (reason === "deadline" || pastDeadline || (reason as { code?: unknown } | undefined)?.code === 4) return "deadline";
  return "cancelled";
}

const telemetry = new WeakMap<CallScope, unknown>();

/**
 * An opaque slot per scope for the tracing context (the runtime stores the
 * request's span context here; the database package parents its statement
 * spans on it), so this package needs no tracing dependency.
 */
export function setScopeTelemetry(scope: CallScope, value: unknown): void {
  telemetry.set(scope, value);
}

export function scopeTelemetry(scope: CallScope): unknown {
  return telemetry.get(scope);
}
