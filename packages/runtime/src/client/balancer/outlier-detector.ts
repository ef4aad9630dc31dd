import type { Clock } from "@platform/resilience";

/**
 * Per-replica outlier detection, as Envoy's: a replica that refuses
 * connections, fails several calls in a row, or fails most of its recent
 * calls while the others succeed, is ejected (given no calls) for a backoff
 * period, then readmitted on probation: its next outcome decides whether
 * it stays or goes back out for twice as long. It sits beneath the
 * dependency's breaker, bulkhead and limit, so one bad replica is routed
 * around and never opens the dependency's breaker; a dependency whose
 * replicas all fail is the breaker's business, which is why no more than
 * `maxEjectedFraction` of the replicas (and never the last one) is ejected.
 */
export interface OutlierDetectionConfig {
  /** Failures in a row that eject a replica. Envoy's default: 5. */
  consecutiveFailures: number;
  /** Recent outcomes kept per replica for the failure-rate rule. */
  windowSize: number;
  /** Outcomes needed in the window before the failure-rate rule applies. */
  minRequests: number;
  /** A replica failing at least this fraction of its window is an outlier... */
  failureRate: number;
  /** ...when the other replicas, together, fail less than this fraction of theirs. */
  othersFailureRate: number;
  /** The first ejection's length; each further one in a row doubles it. */
  baseEjectionMs: number;
  maxEjectionMs: number;
  /** At most this fraction of the replicas is ejected at once (at least one of two or more). */
  maxEjectedFraction: number;
}

export const defaultOutlierDetection: OutlierDetectionConfig = {
  consecutiveFailures: 5,
  windowSize: 20,
  minRequests: 10,
  failureRate: 0.5,
  othersFailureRate: 0.2,
  baseEjectionMs: 1_000,
  maxEjectionMs: 10_000,
  maxEjectedFraction: 0.5,
};

/** What a call told us about the replica that served it. */
export type ReplicaOutcome = "success" | "failure" | "refused";

interface ReplicaState {
  recent: boolean[];
  consecutiveFailures: number;
  /** Ejections in a row: the next lasts base * 2^ejections. */
  ejections: number;
  ejectedUntil: number | undefined;
  /** Readmitted after an ejection: the next outcome decides. */
  probation: boolean;
  healthySince: number;
}

export class OutlierDetector {
  private readonly replicas = new Map<string, ReplicaState>();

  constructor(
    private readonly clock: Clock,
    private readonly config: OutlierDetectionConfig = defaultOutlierDetection,
  ) {}

  add(address: string): void {
    if (!this.replicas.has(address)) {
      this.replicas.set(address, {
        recent: [],
        consecutiveFailures: 0,
        ejections: 0,
        ejectedUntil: undefined,
        probation: false,
        healthySince: this.clock.now(),
      });
    }
  }

  remove(address: string): void {
    this.replicas.delete(address);
  }

  /** Whether the replica may be given calls now. Readmits a replica whose ejection has run out. */
  available(address: string): boolean {
    const r = this.replicas.get(address);
    if (r === undefined) return false;
    if (r.ejectedUntil === undefined) return true;
    if (this.clock.now() < r.ejectedUntil) return false;
    r.ejectedUntil = undefined;
    r.probation = true;
    r.recent = [];
    r.consecutiveFailures = 0;
    return true;
  }

  /** Records a call's outcome; true when it ejected the replica. */
  record(address: string, outcome: ReplicaOutcome): boolean {
    const r = this.replicas.get(address);
    if (r === undefined || r.ejectedUntil !== undefined) return false;
    const now = this.clock.now();
    if (outcome === "success") {
      r.consecutiveFailures = 0;
      push(r.recent, true, this.config.windowSize);
      if (r.probation) {
        r.probation = false;
        r.healthySince = now;
      }
      // Healthy for as long as the longest ejection: the backoff starts over.
      if (r.ejections > 0 && now - r.healthySince >= this.config.maxEjectionMs) r.ejections = 0;
      return false;
    }
    r.consecutiveFailures++;
    push(r.recent, false, this.config.windowSize);
    const outlier =
      outcome === "refused" || r.probation || r.consecutiveFailures >= this.config.consecutiveFailures || this.failsWhileOthersSucceed(address, r);
    return outlier && this.eject(r, now);
  }

  /** Replicas ejected right now. */
  ejectedCount(): number {
    const now = this.clock.now();
    let n = 0;
    for (const r of this.replicas.values()) if (r.ejectedUntil !== undefined && now < r.ejectedUntil) n++;
    return n;
  }

  private failsWhileOthersSucceed(address: string, r: ReplicaState): boolean {
    if (r.recent.length < this.config.minRequests) return false;
    if (failures(r.recent) / r.recent.length < this.config.failureRate) return false;
    let othersTotal = 0;
    let othersFailed = 0;
    for (const [a, o] of this.replicas) {
      if (a === address || o.ejectedUntil !== undefined) continue;
      othersTotal += o.recent.length;
      othersFailed += failures(o.recent);
    }
    return othersTotal > 0 && othersFailed / othersTotal < this.config.othersFailureRate;
  }

  private eject(r: ReplicaState, now: number): boolean {
    const n = this.replicas.size;
    const allowed = n < 2 ? 0 : Math.max(1, Math.floor(n * this.config.maxEjectedFraction));
    if (this.ejectedCount() >= allowed) return false;
    r.ejectedUntil = now + Math.min(this.config.maxEjectionMs, this.config.baseEjectionMs * 2 ** r.ejections);
    r.ejections++;
    r.probation = false;
    return true;
  }
}

function push(window: boolean[], ok: boolean, size: number): void {
  window.push(ok);
  if (window.length > size) window.shift();
}

function failures(window: boolean[]): number {
  let n = 0;
  for (const ok of window) if (!ok) n++;
  return n;
}
