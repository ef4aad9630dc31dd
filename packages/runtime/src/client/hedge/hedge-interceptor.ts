import { MethodOptions_IdempotencyLevel as IdempotencyLevel } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type Interceptor, type UnaryResponse } from "@connectrpc/connect";
import { type RetryBudget, systemClock, type Clock } from "@platform/resilience";
import { hedgeMetrics } from "../../observability/metrics.js";
import { RecentQuantile } from "./recent-quantile.js";

export interface HedgeOptions {
  dependency: string;
  /** The retry budget of the same dependency: a hedge is paid for like a retry. */
  budget: RetryBudget;
  /** A read still unanswered after this quantile of the method's recent latencies is hedged (e.g. 0.95). */
  quantile: number;
  clock?: Clock;
}

/**
 * Hedged reads, as gRPC's hedgingPolicy: a read (a method the proto marks
 * NO_SIDE_EFFECTS) still unanswered after the method's recent p95 gets a
 * second attempt, which the balancer sends to another replica than the
 * first (balancer-interceptor.ts). The first answer wins; the other attempt
 * is cancelled, and the cancellation reaches its server and its SQL
 * statement like any caller's. Each hedge is withdrawn from the retry
 * budget, so hedges and retries together stay the budget's share of the
 * traffic; with the budget spent, the read just waits for its one attempt.
 * A failure before the hedge is due goes to the retry loop outside, as
 * without hedging.
 */
export function hedgeInterceptor(opts: HedgeOptions): Interceptor {
  const clock = opts.clock ?? systemClock;
  const latencies = new Map<string, RecentQuantile>();
  const metrics = hedgeMetrics();
  return (next) => async (req) => {
    if (req.stream || req.method.idempotency !== IdempotencyLevel.NO_SIDE_EFFECTS) return next(req);
    let recent = latencies.get(req.method.name);
    if (recent === undefined) {
      recent = new RecentQuantile(opts.quantile);
      latencies.set(req.method.name, recent);
    }
    const estimate = recent;
    const delayMs = estimate.value();
    return new Promise<UnaryResponse>((resolve, reject) => {
      const attempts: AbortController[] = [];
      let settled = false;
      let pending = 0;
      const settle = (winner: AbortController | undefined) => {
        settled = true;
        clearTimeout(timer);
        for (const a of attempts) if (a !== winner) a.abort(new ConnectError("another attempt of this hedged read answered first", Code.Canceled));
      };
      const launch = (hedge: boolean) => {
        const own = new AbortController();
        attempts.push(own);
        pending++;
        const started = clock.now();
        next({ ...req, signal: AbortSignal.any([req.signal, own.signal]) }).then(
          (res) => {
            pending--;
            if (settled) return;
            estimate.observe(clock.now() - started);
            if (hedge) metrics.won.inc({ dependency: opts.dependency });
            settle(own);
            resolve(res as UnaryResponse);
          },
          (e: unknown) => {
            pending--;
            if (settled) return;
            // The other attempt may still answer; else this fails as a single attempt would
            // (a first attempt failing before the hedge is due goes to the retry loop at once).
            if (pending > 0) return;
            settle(undefined);
            reject(e);
          },
        );
      };
      const timer =
        delayMs === undefined
          ? undefined
          : setTimeout(() => {
              if (settled) return;
              if (!opts.budget.tryWithdraw()) {
                metrics.refused.inc({ dependency: opts.dependency });
                return;
              }
              metrics.sent.inc({ dependency: opts.dependency });
              launch(true);
            }, delayMs);
      timer?.unref();
      launch(false);
    });
  };
}
