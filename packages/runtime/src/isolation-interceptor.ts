import type { Interceptor } from "@connectrpc/connect";
import { Bulkhead, CircuitBreaker, currentScope, systemClock } from "@platform/resilience";
import { isolationMetrics } from "./metrics.js";

export interface IsolationConfig {
  /** Calls to this dependency in flight at once. */
  maxConcurrent: number;
  /** Calls waiting for a slot; beyond it they fail at once. */
  maxQueue: number;
  breaker: BreakerConfig;
}

export interface BreakerConfig {
  volumeThreshold: number;
  errorThresholdPercentage: number;
  windowMs: number;
  resetTimeoutMs: number;
}

/**
 * Circuit breakers (one per method) and a bulkhead of this dependency's own (invariant 6):
 * a slow dependency exhausts only its own slots, and a failing one is cut
 * off quickly instead of being hammered. One HTTP/2 connection would queue
 * silently beyond the server's stream limit; this limiter is what bounds it.
 *
 * An open breaker refuses before a slot is taken. A bulkhead refusal is our
 * own state, not the dependency's health, so it happens outside the
 * breaker: opossum would count an ignored error as a success and dilute the
 * failure rate until the breaker could never open.
 */
export function isolationInterceptor(dependency: string, config: IsolationConfig, reserveMs: number): Interceptor {
  const metrics = isolationMetrics();
  const bulkhead = new Bulkhead({
    name: dependency,
    maxConcurrent: config.maxConcurrent,
    maxQueue: config.maxQueue,
    clock: systemClock,
    onEvent(e) {
      if (e.type === "rejected") metrics.bulkheadRejected.inc({ dependency, reason: e.reason });
      if (e.type === "acquired") metrics.bulkheadWait.observe({ dependency }, e.waitedMs / 1000);
    },
  });
  // One breaker per method of the dependency: a method that fails (orders'
  // CreateOrder while pricing is down) must not cut off one that works
  // (GetOrder, which never needs pricing). The bulkhead stays per dependency.
  const breakers = new Map<string, CircuitBreaker>();
  const breakerFor = (method: string): CircuitBreaker => {
    let b = breakers.get(method);
    if (b) return b;
    b = new CircuitBreaker({
      name: `${dependency}.${method}`,
      volumeThreshold: config.breaker.volumeThreshold,
      errorThresholdPercentage: config.breaker.errorThresholdPercentage,
      rollingCountTimeout: config.breaker.windowMs,
      resetTimeout: config.breaker.resetTimeoutMs,
      clock: systemClock,
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
    return b;
  };
  metrics.watchBulkhead(bulkhead);

  return (next) => async (req) => {
    const breaker = breakerFor(req.method.name);
    if (breaker.state() === "open") return breaker.execute(() => next(req)); // refuses at once
    const scope = currentScope();
    const release = await bulkhead.acquire({
      ...(scope ? { deadlineAt: scope.deadlineAt - reserveMs, signal: scope.signal } : {}),
    });
    try {
      return await breaker.execute(() => next(req));
    } finally {
      release();
    }
  };
}

const stateValue = { closed: 0, half_open: 1, open: 2 } as const;
