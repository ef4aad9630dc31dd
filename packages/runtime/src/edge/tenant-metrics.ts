import { Counter } from "prom-client";
import { register } from "../observability/metrics.js";

/** The edge of this process, whose candidates a scrape promotes (one edge per process; the newest in a test process). */
let current: TenantMetrics | undefined;

export type TenantOutcome = "admitted" | "over_quota";

/** The series of every tenant without one of its own. */
export const otherTenants = "other";

/**
 * Requests per tenant at the edge (`edge_tenant_requests_total{tenant,
 * outcome}`), with the number of series bounded: at most `topN` tenants
 * have their own, the rest are counted as "other". A tenant gets a series
 * when one is free at a scrape and it is the busiest of those counted as
 * "other" since then; it keeps it, so every series only grows (a counter
 * that moved between series would look like a reset). Tenants with a
 * quota override are named from the start.
 */
export class TenantMetrics {
  private readonly named = new Set<string>();
  /** Requests by tenants still counted as "other", for choosing who is named next; bounded like the quota buckets. */
  private readonly candidates = new Map<string, number>();
  private readonly counter: Counter<"tenant" | "outcome">;

  constructor(
    private readonly topN: number,
    preNamed: Iterable<string> = [],
    private readonly maxCandidates = 10_000,
  ) {
    for (const t of preNamed) if (this.named.size < topN) this.named.add(t);
    current = this;
    this.counter =
      (register.getSingleMetric("edge_tenant_requests_total") as Counter<"tenant" | "outcome"> | undefined) ??
      new Counter({
        name: "edge_tenant_requests_total",
        help: 'Requests at the edge by tenant (the busiest TENANT_METRICS_TOP_N, the rest as "other") and outcome (admitted, over_quota).',
        labelNames: ["tenant", "outcome"],
        collect: () => current?.promote(),
      });
  }

  count(tenant: string, outcome: TenantOutcome): void {
    if (this.named.has(tenant)) {
      this.counter.inc({ tenant, outcome });
      return;
    }
    this.counter.inc({ tenant: otherTenants, outcome });
    if (this.named.size >= this.topN) return;
    this.candidates.set(tenant, (this.candidates.get(tenant) ?? 0) + 1);
    if (this.candidates.size > this.maxCandidates) this.candidates.delete(this.candidates.keys().next().value!);
  }

  /** Names the busiest candidates while series are free (at each scrape). */
  promote(): void {
    if (this.candidates.size === 0) return;
    const free = this.topN - this.named.size;
    const busiest = [...this.candidates].sort((a, b) => b[1] - a[1]).slice(0, Math.max(0, free));
    for (const [tenant] of busiest) this.named.add(tenant);
    if (this.named.size >= this.topN) this.candidates.clear();
  }
}
