import { Counter, Gauge, Histogram, collectDefaultMetrics, register } from "prom-client";
import { cellsOf, type MetricCells } from "./metric-cells.js";

/**
 * Every process exports one Prometheus registry (prom-client's default), so
 * that the runtime, the database package and the resilience wiring all land
 * on the same /metrics page. Metrics are created lazily and once, so two
 * servers in one test process don't collide.
 */
export { register };

function once<T>(name: string, create: () => T): T {
  return (register.getSingleMetric(name) as T | undefined) ?? create();
}

const latencyBuckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export function rpcServerMetrics() {
  return {
    /** Counted through `requestCells` on the request path (metric-cells.ts); `inc` on it directly still adds up. */
    requests: once(
      "rpc_server_requests_total",
      () =>
        new Counter({
          name: "rpc_server_requests_total",
          help: "RPCs served, by procedure and status code.",
          labelNames: ["procedure", "code"],
          collect() {
            cellsOf(this, ["procedure", "code"]).flushInto(this);
          },
        }),
    ),
    duration: once(
      "rpc_server_duration_seconds",
      () =>
        new Histogram({
          name: "rpc_server_duration_seconds",
          help: "Time to serve an RPC, by procedure and status code.",
          labelNames: ["procedure", "code"],
          buckets: latencyBuckets,
        }),
    ),
    /** Set from its cells when read: count through `cellsOf(inFlight, ["procedure"])`, not inc/dec. */
    inFlight: once(
      "rpc_server_in_flight",
      () =>
        new Gauge({
          name: "rpc_server_in_flight",
          help: "RPCs being served now.",
          labelNames: ["procedure"],
          collect() {
            cellsOf(this, ["procedure"]).setInto(this);
          },
        }),
    ),
  };
}

/** One replica's call counts by outcome, as a balancer keeps them. */
export interface ReplicaCallCounts {
  dependency: string;
  replica: string;
  outcomes: Readonly<Record<string, number>>;
}

const replicaSources: (() => Iterable<ReplicaCallCounts>)[] = [];

/**
 * Calls per replica of a dependency, by outcome (ok: it answered; failure;
 * refused: its connection was; cancelled: by the caller). The balancers
 * count in plain fields on the call path; the counter reads them on scrape.
 */
export function replicaCallMetrics(source: () => Iterable<ReplicaCallCounts>): void {
  replicaSources.push(source);
  once(
    "rpc_client_replica_calls_total",
    () =>
      new Counter({
        name: "rpc_client_replica_calls_total",
        help: "Call attempts per replica of a dependency, by outcome (ok, failure, refused, cancelled).",
        labelNames: ["dependency", "replica", "outcome"],
        collect() {
          this.reset();
          for (const read of replicaSources) {
            for (const { dependency, replica, outcomes } of read()) {
              for (const [outcome, n] of Object.entries(outcomes)) this.inc({ dependency, replica, outcome }, n);
            }
          }
        },
      }),
  );
}

/** Hedged reads (hedge-interceptor.ts). */
export function hedgeMetrics() {
  return {
    sent: once(
      "hedge_sent_total",
      () => new Counter({ name: "hedge_sent_total", help: "Second attempts of slow reads (hedges), paid from the retry budget.", labelNames: ["dependency"] }),
    ),
    won: once(
      "hedge_won_total",
      () => new Counter({ name: "hedge_won_total", help: "Hedges that answered before the first attempt.", labelNames: ["dependency"] }),
    ),
    refused: once(
      "hedge_refused_total",
      () => new Counter({ name: "hedge_refused_total", help: "Hedges not sent: the retry budget was spent.", labelNames: ["dependency"] }),
    ),
  };
}

export function rpcClientMetrics() {
  return {
    calls: once(
      "rpc_client_calls_total",
      () =>
        new Counter({
          name: "rpc_client_calls_total",
          help: "Calls to a dependency (one per attempt), by dependency, procedure and status code.",
          labelNames: ["dependency", "procedure", "code"],
          // Successful calls are counted in cells (`okCallCells`), the rest with inc().
          collect() {
            okCallCells(this).flushInto(this, { code: "ok" });
          },
        }),
    ),
    duration: once(
      "rpc_client_duration_seconds",
      () =>
        new Histogram({
          name: "rpc_client_duration_seconds",
          help: "Duration of one call attempt to a dependency.",
          labelNames: ["dependency", "procedure"],
          buckets: latencyBuckets,
        }),
    ),
  };
}

/**
 * The successful calls of rpc_client_calls_total, by dependency and
 * procedure (code "ok"): counted in plain numbers on every call's path and
 * added to the counter when it is read (metric-cells.ts). Other codes are
 * rare and go through `inc` directly.
 */
export function okCallCells(calls: object): MetricCells {
  return cellsOf(calls, ["dependency", "procedure"]);
}

export function deadlineMetrics() {
  return {
    /** Counted through `cellsOf(missing, ["procedure"])` on the request path; `inc` on it directly still adds up. */
    missing: once(
      "deadline_missing_total",
      () =>
        new Counter({
          name: "deadline_missing_total",
          help: "Inbound requests that arrived without a deadline and got the configured default/fallback.",
          labelNames: ["procedure"],
          collect() {
            cellsOf(this, ["procedure"]).flushInto(this);
          },
        }),
    ),
    capped: once(
      "deadline_capped_total",
      () => new Counter({ name: "deadline_capped_total", help: "Inbound deadlines longer than DEADLINE_MAX_MS, cut to it.", labelNames: ["procedure"] }),
    ),
    remainingAtArrival: once(
      "deadline_remaining_at_arrival_seconds",
      () =>
        new Histogram({
          name: "deadline_remaining_at_arrival_seconds",
          help: "Deadline left when a request arrives at this hop.",
          labelNames: ["procedure"],
          buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 30],
        }),
    ),
    finishedAfterDeadline: once(
      "deadline_work_after_deadline_total",
      () =>
        new Counter({
          name: "deadline_work_after_deadline_total",
          help: "Handlers that finished after their deadline: work nobody waited for.",
          labelNames: ["procedure"],
        }),
    ),
    rejectedBeforeStart: once(
      "deadline_rejected_before_start_total",
      () =>
        new Counter({
          name: "deadline_rejected_before_start_total",
          help: "Downstream calls not started because the remaining budget was below the minimum.",
          labelNames: ["dependency"],
        }),
    ),
  };
}

/**
 * How often the event loop lag monitor samples (prom-client's default is
 * 10 ms). Each sample wakes the process: at 10 ms an idle service spent
 * 6-9 ms of CPU a second on it, most of what it spent at all (a test run
 * keeps about 200 services waiting; a fleet keeps more); at 50 ms, about 1.
 * A loop that is saturated delays every sample, so
 * `nodejs_eventloop_lag_*` shows saturation as before; a single stall
 * shorter than 50 ms is caught with a probability of its length over 50 ms
 * instead of always (docs/observability.md).
 */
export const eventLoopSampleMs = 50;

let defaultsCollected = false;
/**
 * Process metrics (CPU, memory, event loop lag, handles): collected once per
 * process. A replica's name, when it has one, labels every metric.
 */
export function collectProcessMetrics(replica?: string): void {
  if (defaultsCollected) return;
  defaultsCollected = true;
  if (replica !== undefined) register.setDefaultLabels({ replica });
  collectDefaultMetrics({ eventLoopMonitoringPrecision: eventLoopSampleMs });
}

export function retryMetrics() {
  return {
    attempts: once(
      "retry_attempts_per_request",
      () =>
        new Histogram({
          name: "retry_attempts_per_request",
          help: "Attempts made for one user request to a dependency (1 = no retry).",
          labelNames: ["dependency"],
          buckets: [1, 2, 3, 4, 5],
        }),
    ),
    retries: once(
      "retry_retries_total",
      () =>
        new Counter({
          name: "retry_retries_total",
          help: "Retries made, by reason and the failed attempt's code.",
          labelNames: ["dependency", "reason", "code"],
        }),
    ),
    refused: once(
      "retry_refused_total",
      () =>
        new Counter({
          name: "retry_refused_total",
          help: "Retries wanted but not made, by reason (budget_exhausted is the early warning).",
          labelNames: ["dependency", "reason"],
        }),
    ),
    budgetBalance: once(
      "retry_budget_balance",
      () => new Gauge({ name: "retry_budget_balance", help: "Retries the budget would allow right now.", labelNames: ["dependency"] }),
    ),
    pushbackHonoured: once(
      "retry_pushback_honoured_total",
      () => new Counter({ name: "retry_pushback_honoured_total", help: "Retries delayed by the server's pushback hint.", labelNames: ["dependency"] }),
    ),
  };
}

export function admissionMetrics(controller: { stats(): { inFlight: number; queuedCritical: number; queuedSheddable: number } }) {
  const m = {
    /** Counted through `cellsOf(admitted, ["criticality"])` on the request path; `inc` on it directly still adds up. */
    admitted: once(
      "admission_admitted_total",
      () =>
        new Counter({
          name: "admission_admitted_total",
          help: "Requests admitted by admission control.",
          labelNames: ["criticality"],
          collect() {
            cellsOf(this, ["criticality"]).flushInto(this);
          },
        }),
    ),
    shed: once(
      "admission_shed_total",
      () =>
        new Counter({
          name: "admission_shed_total",
          help: "Requests refused before any work, by reason (queue_full, queue_timeout, expired, evicted, cancelled, intake) and criticality.",
          labelNames: ["reason", "criticality"],
        }),
    ),
    queueWait: once(
      "admission_queue_wait_seconds",
      () =>
        new Histogram({
          name: "admission_queue_wait_seconds",
          help: "Time admitted requests waited in the admission queue.",
          buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
        }),
    ),
  };
  once(
    "admission_in_flight",
    () =>
      new Gauge({
        name: "admission_in_flight",
        help: "Requests being served (admitted and not finished).",
        collect() {
          this.set(controller.stats().inFlight);
        },
      }),
  );
  once(
    "admission_queued",
    () =>
      new Gauge({
        name: "admission_queued",
        help: "Requests waiting for admission, by criticality.",
        labelNames: ["criticality"],
        collect() {
          const s = controller.stats();
          this.set({ criticality: "critical" }, s.queuedCritical);
          this.set({ criticality: "sheddable" }, s.queuedSheddable);
        },
      }),
  );
  return m;
}

/**
 * One limiter of the isolation layer: a dependency's slots for one method
 * class (packages/runtime/src/client/isolation-interceptor.ts), read at scrape time.
 */
export interface IsolationGaugeSource {
  readonly dependency: string;
  readonly methodClass: string;
  snapshot(): { inUse: number; queued: number; limit: number; latencyMs: { recent: number; baseline: number } };
}

const isolationSources = new Set<IsolationGaugeSource>();

type IsolationSnapshot = ReturnType<IsolationGaugeSource["snapshot"]>;

/** A per-class gauge of every watched limiter, read at scrape time. */
function isolationGauge(read: (s: IsolationSnapshot) => number) {
  return function collect(this: Gauge<"dependency" | "class">) {
    for (const s of isolationSources) this.set({ dependency: s.dependency, class: s.methodClass }, read(s.snapshot()));
  };
}

export function isolationMetrics() {
  const labelNames = ["dependency", "class"] as const;
  once(
    "bulkhead_in_use",
    () =>
      new Gauge({
        name: "bulkhead_in_use",
        help: "Calls to a dependency holding a bulkhead slot, per method class.",
        labelNames,
        collect: isolationGauge((s) => s.inUse),
      }),
  );
  once(
    "bulkhead_queued",
    () =>
      new Gauge({
        name: "bulkhead_queued",
        help: "Calls to a dependency waiting for a bulkhead slot, per method class.",
        labelNames,
        collect: isolationGauge((s) => s.queued),
      }),
  );
  once(
    "bulkhead_limit",
    () =>
      new Gauge({
        name: "bulkhead_limit",
        help: "Current concurrency limit of a dependency's method class: adaptive (moves within [min, max] with the latency it observes) or fixed.",
        labelNames,
        collect: isolationGauge((s) => s.limit),
      }),
  );
  once(
    "bulkhead_latency_seconds",
    () =>
      new Gauge({
        name: "bulkhead_latency_seconds",
        help: "Latency the adaptive limit measures per dependency and method class: window=recent (short window) and window=baseline (long-window, no-load).",
        labelNames: ["dependency", "class", "window"],
        collect() {
          for (const s of isolationSources) {
            const { latencyMs } = s.snapshot();
            this.set({ dependency: s.dependency, class: s.methodClass, window: "recent" }, latencyMs.recent / 1000);
            this.set({ dependency: s.dependency, class: s.methodClass, window: "baseline" }, latencyMs.baseline / 1000);
          }
        },
      }),
  );
  return {
    watchIsolation(source: IsolationGaugeSource) {
      isolationSources.add(source);
    },
    bulkheadRejected: once(
      "bulkhead_rejected_total",
      () =>
        new Counter({
          name: "bulkhead_rejected_total",
          help: "Calls refused by a dependency's bulkhead, by method class and reason (full, expected_wait, deadline, canceled).",
          labelNames: ["dependency", "class", "reason"],
        }),
    ),
    bulkheadStalls: once(
      "bulkhead_stall_verdicts_total",
      () =>
        new Counter({
          name: "bulkhead_stall_verdicts_total",
          help: "Verdicts on a dependency's overdue calls, per method class: kind=restart for each answer that it waits out a restart (the calls wait with it), kind=stall for each sweep that refused queued calls as behind a stall.",
          labelNames: ["dependency", "class", "kind"],
        }),
    ),
    bulkheadWait: once(
      "bulkhead_queue_wait_seconds",
      () =>
        new Histogram({
          name: "bulkhead_queue_wait_seconds",
          help: "Time a call waited for a bulkhead slot.",
          labelNames: ["dependency", "class"],
          buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
        }),
    ),
    breakerState: once(
      "circuit_breaker_state",
      () =>
        new Gauge({
          name: "circuit_breaker_state",
          help: "Breaker state per dependency method: 0 closed, 1 half-open, 2 open.",
          labelNames: ["dependency", "method"],
        }),
    ),
    breakerTransitions: once(
      "circuit_breaker_transitions_total",
      () => new Counter({ name: "circuit_breaker_transitions_total", help: "Breaker state changes.", labelNames: ["dependency", "method", "from", "to"] }),
    ),
    breakerRejected: once(
      "circuit_breaker_rejected_total",
      () =>
        new Counter({
          name: "circuit_breaker_rejected_total",
          help: "Calls refused at once because the breaker of the dependency's method is open.",
          labelNames: ["dependency", "method"],
        }),
    ),
  };
}

export function intakeMetrics() {
  return {
    fraction: once("intake_admit_fraction", () => new Gauge({ name: "intake_admit_fraction", help: "Share of new requests the edge admits (1 = all)." })),
    state: once("intake_state", () => new Gauge({ name: "intake_state", help: "Intake controller state (1 for the current one).", labelNames: ["state"] })),
    transitions: once(
      "intake_transitions_total",
      () => new Counter({ name: "intake_transitions_total", help: "Intake controller state changes.", labelNames: ["from", "to", "reason"] }),
    ),
  };
}

/** A service's own counter, created once per process (safe to call at every construction). */
export function serviceCounter<L extends string>(name: string, help: string, labelNames: readonly L[]): Counter<L> {
  return once(name, () => new Counter({ name, help, labelNames }));
}

/** Server streams at this hop: open now, and refused by their own admission class (stream-admission.ts). */
export function streamMetrics(open: () => number) {
  return {
    open: once(
      "rpc_server_streams_open",
      () =>
        new Gauge({
          name: "rpc_server_streams_open",
          help: "Server-streaming calls open now (their own admission class, apart from unary calls).",
          collect() {
            this.set(open());
          },
        }),
    ),
    refused: once(
      "rpc_server_streams_refused_total",
      () =>
        new Counter({
          name: "rpc_server_streams_refused_total",
          help: "Server-streaming calls refused by the stream limits, by reason (process, caller).",
          labelNames: ["reason"],
        }),
    ),
  };
}
