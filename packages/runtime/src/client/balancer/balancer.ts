import type { Clock } from "@platform/resilience";
import { Endpoint, type Closable } from "./endpoint.js";
import { OutlierDetector, type OutlierDetectionConfig, type ReplicaOutcome } from "./outlier-detector.js";
import { pickOfTwo } from "./pick.js";
import type { Resolver } from "./resolver.js";
import type { ReplicaCallCounts } from "../../observability/metrics.js";

export interface BalancerOptions<C extends Closable> {
  /** Names the dependency in errors. */
  dependency: string;
  resolver: Resolver;
  /** Opens the connection to one address. */
  connect: (origin: string) => C;
  clock: Clock;
  random: () => number;
  outlierDetection: OutlierDetectionConfig;
  /** A failed resolution is retried no sooner than this after the last one. */
  minResolveGapMs?: number;
  /**
   * "per-call" (the default): each call picks. "per-connection": what a
   * ClusterIP Service gives a caller, for comparison (the lab): one replica
   * at random for as long as calls to it do not fail on the connection,
   * then another at random, dead or not; no ejection.
   */
  mode?: BalancingMode;
}

export type BalancingMode = "per-call" | "per-connection";

/**
 * A dependency's replicas and the choice among them for each call. The
 * address list comes from the resolver: at start, on every `refresh()` (a
 * timer calls it every few seconds), and soon after a replica fails a
 * connection or sends GOAWAY (`resolveSoon()`). New addresses join at once;
 * vanished ones are drained. Each call goes to the cheaper of two random
 * available replicas (pick.ts); outlier detection takes a failing one out
 * for a while (outlier-detector.ts).
 */
export class Balancer<C extends Closable> {
  private readonly endpoints = new Map<string, Endpoint<C>>();
  /** The counts of drained replicas. */
  private readonly retired = new Map<string, Endpoint<C>["outcomes"]>();
  private readonly outliers: OutlierDetector;
  private resolving: Promise<void> | undefined;
  private lastResolveAt = -Infinity;
  private lastError: unknown;
  private closed = false;
  /** per-connection mode: the replica every call goes to. */
  private pinned: Endpoint<C> | undefined;

  constructor(private readonly opts: BalancerOptions<C>) {
    this.outliers = new OutlierDetector(opts.clock, opts.outlierDetection);
  }

  /** Resolves the addresses again; the list is kept as it is when the resolver fails or answers nothing. */
  refresh(): Promise<void> {
    this.resolving ??= this.resolveOnce().finally(() => {
      this.resolving = undefined;
    });
    return this.resolving;
  }

  /** A refresh now, unless one ran a moment ago (many calls failing together ask once). */
  resolveSoon(): void {
    if (this.opts.clock.now() - this.lastResolveAt >= (this.opts.minResolveGapMs ?? 250)) void this.refresh();
  }

  /** Whether any address is known (a call need not wait for a resolution). */
  hasAddresses(): boolean {
    return this.liveCount() > 0;
  }

  /** Waits for the first resolution when there is no address yet. */
  async ready(): Promise<void> {
    if (this.liveCount() === 0) await this.refresh();
  }

  /**
   * The replica for the next call, avoiding `tried` (a retry's or hedge's
   * earlier replicas) while any other is available; undefined when there is
   * no address at all.
   */
  pick(tried?: ReadonlySet<string>): Endpoint<C> | undefined {
    // One address (a ClusterIP Service, a single replica): every rule below picks it,
    // so no lists are built per call.
    if (this.endpoints.size === 1 && this.opts.mode !== "per-connection") {
      const only = this.endpoints.values().next().value!;
      if (!only.draining) return only;
    }
    const live = [...this.endpoints.values()].filter((e) => !e.draining);
    if (this.opts.mode === "per-connection") {
      if (this.pinned === undefined || this.pinned.draining) this.pinned = live[Math.floor(this.opts.random() * live.length)];
      return this.pinned;
    }
    const available = live.filter((e) => this.outliers.available(e.origin));
    const untried = tried === undefined || tried.size === 0 ? available : available.filter((e) => !tried.has(e.origin));
    return pickOfTwo(untried.length > 0 ? untried : available.length > 0 ? available : live, this.opts.random);
  }

  /** The endpoint for an address a call was sent to (draining ones included). */
  endpoint(origin: string): Endpoint<C> | undefined {
    return this.endpoints.get(origin);
  }

  /** Records how a call ended on a replica; an ejection or a refused connection triggers a re-resolution. */
  record(endpoint: Endpoint<C>, outcome: ReplicaOutcome, latencyMs?: number): void {
    endpoint.outcomes[outcome === "success" ? "ok" : outcome]++;
    if (this.opts.mode === "per-connection") {
      // A new connection after a failed one, to whichever replica the virtual address sends it to.
      if (outcome !== "success" && endpoint === this.pinned) this.pinned = undefined;
      this.closeIfDrained(endpoint);
      return;
    }
    if (outcome === "success" && latencyMs !== undefined) endpoint.latency.observe(latencyMs);
    const ejected = this.outliers.record(endpoint.origin, outcome);
    if (ejected) endpoint.latency.reset();
    if (ejected || outcome === "refused") this.resolveSoon();
    this.closeIfDrained(endpoint);
  }

  /** A call ended without saying anything about the replica (cancelled by its caller). */
  release(endpoint: Endpoint<C>): void {
    endpoint.outcomes.cancelled++;
    this.closeIfDrained(endpoint);
  }

  /** Every replica's call counts, the drained ones' included (counters never go back). */
  *callCounts(): Iterable<ReplicaCallCounts> {
    for (const [replica, outcomes] of this.retired) yield { dependency: this.opts.dependency, replica, outcomes };
    for (const e of this.endpoints.values()) yield { dependency: this.opts.dependency, replica: e.origin, outcomes: e.outcomes };
  }

  /** The addresses calls may go to now, for errors and metrics. */
  addresses(): string[] {
    return [...this.endpoints.values()].filter((e) => !e.draining).map((e) => e.origin);
  }

  ejectedCount(): number {
    return this.outliers.ejectedCount();
  }

  /** Why the last resolution failed, for the error a call gets when there is no address. */
  resolveError(): unknown {
    return this.lastError;
  }

  close(): void {
    this.closed = true;
    for (const e of this.endpoints.values()) e.close();
    this.endpoints.clear();
  }

  private liveCount(): number {
    let n = 0;
    for (const e of this.endpoints.values()) if (!e.draining) n++;
    return n;
  }

  private async resolveOnce(): Promise<void> {
    this.lastResolveAt = this.opts.clock.now();
    let origins: string[];
    try {
      origins = await this.opts.resolver();
      this.lastError = undefined;
    } catch (e) {
      this.lastError = e;
      return;
    }
    if (this.closed || origins.length === 0) return;
    const wanted = new Set(origins);
    for (const origin of wanted) {
      const known = this.endpoints.get(origin);
      if (known) {
        known.draining = false;
        continue;
      }
      this.endpoints.set(origin, new Endpoint(origin, this.opts.clock, this.opts.connect));
      this.outliers.add(origin);
    }
    for (const e of this.endpoints.values()) {
      if (wanted.has(e.origin)) continue;
      e.draining = true;
      this.closeIfDrained(e);
    }
  }

  private closeIfDrained(e: Endpoint<C>): void {
    if (!e.draining || e.outstanding > 0) return;
    e.close();
    this.endpoints.delete(e.origin);
    this.retired.set(e.origin, sumOutcomes(this.retired.get(e.origin), e.outcomes));
    this.outliers.remove(e.origin);
  }
}

function sumOutcomes(a: Endpoint["outcomes"] | undefined, b: Endpoint["outcomes"]): Endpoint["outcomes"] {
  return a === undefined ? { ...b } : { ok: a.ok + b.ok, failure: a.failure + b.failure, refused: a.refused + b.refused, cancelled: a.cancelled + b.cancelled };
}
