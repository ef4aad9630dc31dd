export * from "./clock.js";
export * from "./call-scope.js";

// Time and randomness, injectable.
export { type Scheduler, systemScheduler, FakeScheduler } from "./scheduler.js";
export { seededRandom } from "./seeded-random.js";

// Deadlines on the wire.
export {
  parseTimeoutHeader,
  formatGrpcTimeout,
  formatConnectTimeout,
  resolveInboundDeadline,
  type TimeoutHeaderName,
  type ParsedTimeout,
  type InboundDeadlineInput,
  type InboundDeadline,
} from "./timeout-header.js";
export { callsEndAt, defaultDeadlineBudget, minAttemptMs, statementTimeoutMs, type DeadlineBudget } from "./deadline-budget.js";

// One error taxonomy: whose problem an outcome is.
export {
  classify,
  neverRetryable,
  countsAgainstDependency,
  signalsOverload,
  isServerFault,
  describesCallersRequest,
  type FailureClass,
} from "./failure-class.js";

// Idempotency keys: one rule for the gateway and orders.
export { idempotencyKeyHeader, maxIdempotencyKeyLength, idempotencyKeyProblem, checkIdempotencyKey } from "./idempotency-key.js";

// Retries (the gateway only).
export { backoffDelayMs, backoffCapMs, type BackoffPolicy } from "./backoff.js";
export { RetryBudget, type RetryBudgetOptions, type RetryBudgetStats } from "./retry-budget.js";
export { type RetryPolicy, defaultRetryPolicy, noRetryPolicy, neverRetryableCodes } from "./retry-policy.js";
export { decideRetry, type RetryDecisionInput, type RetryDecision } from "./retry-decision.js";
export { readPushback, pushbackHeaders, grpcRetryPushbackHeader, retryAfterHeader } from "./pushback.js";
export { LatencyEstimate, type LatencyEstimateOptions } from "./latency-estimate.js";

// The one deadline-aware FIFO wait queue under bulkhead, admission and the database's connection slots.
export { WaitQueue, type WaitQueueOptions, type WaitOptions, type WaitTicket, type WaitingEntry, type LeaveReason, type Settlement } from "./wait-queue.js";

// Isolation per dependency.
export {
  Bulkhead,
  type BulkheadOptions,
  type ConcurrencyLimiter,
  type AcquireOptions,
  type Release,
  type ReleaseOutcome,
  type BulkheadEvent,
  type BulkheadRejectReason,
  type BulkheadStats,
  type StallKind,
} from "./bulkhead.js";
export { AdaptiveLimit, type AdaptiveLimitOptions, type AdaptiveLimitSnapshot, type LimitSample } from "./adaptive-limit.js";
export {
  CircuitBreaker,
  isDependencyFailure,
  type CircuitBreakerOptions,
  type CircuitState,
  type CircuitBreakerEvent,
  type CircuitBreakerStats,
} from "./circuit-breaker.js";
export { BreakerProbe, type BreakerProbeOptions } from "./breaker-probe.js";
export { localRejection, markLocalRejection, type LocalRejection, type LocalRejectionKind } from "./local-rejection.js";
export { failedDependencyHeader, failedDependencyOf } from "./failed-dependency.js";

// Metastable recovery at the edge.
export {
  IntakeController,
  type IntakeControllerOptions,
  type IntakeState,
  type IntakeChangeReason,
  type IntakeTransition,
  type IntakeSnapshot,
} from "./intake-controller.js";

// Fault injection (off unless asked for).
export {
  currentFaults,
  setFaults,
  parseFaults,
  shouldFail,
  shouldDropResponse,
  faultApplies,
  injectedDelay,
  type Faults,
  type FaultSpec,
  type DatabaseFaultSpec,
} from "./faults.js";

// Admission control at every server.
export { AdmissionController, type AdmissionOptions, type AdmissionOutcome, type Criticality, type ShedReason } from "./admission.js";
export { cellsOf, histogramCellsOf, type MetricCells, type MetricCell, type HistogramCell, type HistogramCells } from "./metric-cells.js";
