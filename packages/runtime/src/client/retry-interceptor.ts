import { MethodOptions_IdempotencyLevel as IdempotencyLevel } from "@bufbuild/protobuf/wkt";
import { ConnectError, createContextKey, type Interceptor } from "@connectrpc/connect";
import {
  LatencyEstimate,
  type RetryBudget,
  currentScope,
  decideRetry,
  readPushback,
  remainingMs,
  systemClock,
  type Clock,
  type RetryPolicy,
} from "@platform/resilience";
import { retryInfoDelayMs } from "@platform/proto/error-details";
import { retryMetrics } from "../observability/metrics.js";
import { histogramCellsOf } from "../observability/metric-cells.js";
import { wasNeverProcessed } from "./downstream-error.js";
import { idempotencyKeyHeader } from "../headers.js";
import { withFirstMessage } from "../server/stream-messages.js";

/** The attempt number of a call (1 = first), for the client span of each attempt. */
export const attemptKey = createContextKey(1, { description: "retry attempt" });

export interface RetryInterceptorOptions {
  dependency: string;
  policy: RetryPolicy;
  /** Shared by every call to this dependency: retries stay a share of traffic. */
  budget: RetryBudget;
  /**
   * The least time an attempt needs to reach the bottom of the chain below
   * (resilience's `minAttemptMs` for the hops it crosses, as
   * `createDependencyClient` passes it); a retry with less left is not started.
   */
  minAttemptMs?: number;
  clock?: Clock;
  random?: () => number;
}

/**
 * The edge's retry loop, the only one in the platform (inner hops attempt
 * every call exactly once).
 *
 * It retries only what can be repeated safely (a method the proto marks
 * NO_SIDE_EFFECTS, or IDEMPOTENT and carrying an Idempotency-Key, which it
 * sends unchanged on every attempt), only retryable failures, never past the
 * deadline, honouring the server's pushback, and only while the retry
 * budget allows: under total failure the dependency sees about 1.1x the
 * traffic, not 3x. Each attempt goes through the inner interceptors again,
 * so each carries the deadline that remains at that moment.
 */
export function retryInterceptor(opts: RetryInterceptorOptions): Interceptor {
  const metrics = retryMetrics();
  const latency = new LatencyEstimate();
  // Every call's attempts, in a cell (metric-cells.ts): no label hashing per call.
  const attempts = histogramCellsOf(metrics.attempts, ["dependency"]).cell(opts.dependency);
  const clock = opts.clock ?? systemClock;
  const random = opts.random ?? Math.random;
  metrics.budgetBalance.set({ dependency: opts.dependency }, opts.budget.balance());

  return (next) => async (req) => {
    const idempotent =
      req.method.idempotency === IdempotencyLevel.NO_SIDE_EFFECTS ||
      (req.method.idempotency === IdempotencyLevel.IDEMPOTENT && req.header.has(idempotencyKeyHeader));
    opts.budget.deposit();
    // A stream's request messages can be read once: read here, each attempt sends them again.
    const sent = req.stream ? await readAll(req.message) : undefined;
    for (let attempt = 1; ; attempt++) {
      const started = clock.now();
      req.contextValues.set(attemptKey, attempt);
      try {
        // A stream is retried only until its first message: from then on a failure
        // reaches the caller, who resumes (docs/streams.md).
        const answered = await next(sent && req.stream ? { ...req, message: replay(sent) } : req);
        const res = answered.stream ? await withFirstMessage(answered) : answered;
        latency.observe(clock.now() - started);
        attempts.observe(attempt);
        return res;
      } catch (e) {
        const error = ConnectError.from(e);
        const scope = currentScope();
        // The pushback headers first (only they can say "never"), else the
        // RetryInfo detail that grpc-go, grpc-java and Google's clients send.
        const pushbackMs = readPushback(error.metadata, Date.now()) ?? retryInfoDelayMs(error);
        const decision = decideRetry({
          error,
          attempt,
          policy: opts.policy,
          remainingMs: scope ? remainingMs(scope) : Infinity,
          expectedAttemptMs: latency.expectedMs(),
          minAttemptMs: opts.minAttemptMs ?? 0,
          ...(pushbackMs !== undefined ? { pushbackMs } : {}),
          idempotent,
          neverProcessed: wasNeverProcessed(error),
          budget: opts.budget,
          random,
        });
        metrics.budgetBalance.set({ dependency: opts.dependency }, opts.budget.balance());
        if (!decision.retry) {
          if (attempt > 1 || decision.reason === "budget_exhausted" || decision.reason === "deadline") {
            metrics.refused.inc({ dependency: opts.dependency, reason: decision.reason });
          }
          attempts.observe(attempt);
          throw error;
        }
        metrics.retries.inc({ dependency: opts.dependency, reason: decision.reason, code: String(error.code) });
        if (typeof pushbackMs === "number") metrics.pushbackHonoured.inc({ dependency: opts.dependency });
        await sleep(decision.delayMs, scope?.signal);
      }
    }
  };
}

async function readAll<M>(messages: AsyncIterable<M>): Promise<M[]> {
  const all: M[] = [];
  for await (const m of messages) all.push(m);
  return all;
}

async function* replay<M>(messages: readonly M[]): AsyncGenerator<M> {
  yield* messages;
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(ConnectError.from(signal.reason));
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(ConnectError.from(signal!.reason));
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
