/**
 * The deadline budget: what each hop keeps back of a request's deadline,
 * and the least time worth starting work with. Every reserve and floor the
 * platform applies is defined here, once; the request context, the
 * dependency client's interceptors (retry, budget gate, bulkhead,
 * propagation) and the database call these.
 *
 *   arrival                                              deadline
 *   |--------------------------------------------|- hop reserve -|
 *                                           calls end: every call to a
 *                                           dependency and every SQL
 *                                           statement has ended, and the
 *                                           hop reserve is left to answer
 *
 * A call, transaction or statement is not started with less than the
 * minimum budget left; a (re)try at the edge not with less than the
 * minimum attempt (a hop reserve per service the call crosses, plus the
 * minimum budget at the bottom).
 */
export interface DeadlineBudget {
  /** Kept back from every call to a dependency and every statement, to write this hop's own answer (DEADLINE_HOP_RESERVE_MS). */
  hopReserveMs: number;
  /** No call, transaction or statement starts with less than this left (DEADLINE_MIN_BUDGET_MS). */
  minBudgetMs: number;
}

/** The shipped budget: what a service runs with when DEADLINE_HOP_RESERVE_MS and DEADLINE_MIN_BUDGET_MS are not set. */
export const defaultDeadlineBudget: Readonly<DeadlineBudget> = Object.freeze({ hopReserveMs: 5, minBudgetMs: 10 });

/**
 * When this hop stops waiting for what it called: its deadline less the hop
 * reserve. The deadline of every outgoing call, and the moment the request
 * context's `callsEnd` fires.
 */
export function callsEndAt(deadlineAt: number, hopReserveMs: number): number {
  return deadlineAt - hopReserveMs;
}

/**
 * The least time a call needs to reach the bottom of a chain
 * `servicesCrossed` services deep: a hop reserve per service it crosses
 * plus the minimum budget at the last. With less, a hop further down would
 * refuse it. The edge's retry layer starts no attempt with less left (the
 * registry's `callDepth`); a bulkhead wait for one dependency ends when
 * less than this (one service crossed) is left.
 */
export function minAttemptMs(budget: DeadlineBudget, servicesCrossed = 1): number {
  return budget.hopReserveMs * servicesCrossed + budget.minBudgetMs;
}

/**
 * A statement's statement_timeout with `remainingMs` of the deadline left:
 * the hop reserve kept back, so that PostgreSQL's cancel and this hop's
 * error answer both fit before the deadline; at least 1 ms (0 would turn
 * the timeout off).
 */
export function statementTimeoutMs(remainingMs: number, hopReserveMs: number): number {
  return Math.max(1, Math.floor(remainingMs - hopReserveMs));
}
