import { parsePrometheus, sumOf, type Sample } from "./prometheus.js";

/** The /metrics of every service at one instant (a service that did not answer is absent). */
export interface Snapshot {
  /** Epoch ms when the scrape started. */
  at: number;
  services: Record<string, Sample[]>;
}

export interface ScrapeTarget {
  name: string;
  /** e.g. http://127.0.0.1:9083 */
  adminUrl: string;
}

async function scrapeOne(t: ScrapeTarget, timeoutMs: number): Promise<Sample[] | undefined> {
  try {
    const res = await fetch(`${t.adminUrl}/metrics`, { signal: AbortSignal.timeout(timeoutMs) });
    if (!res.ok) return undefined;
    return parsePrometheus(await res.text());
  } catch {
    return undefined;
  }
}

/**
 * Scrapes every service's /metrics on an interval and on demand, keeping
 * every snapshot: counters are then diffed over any window of the run.
 */
export class MetricsRecorder {
  readonly snapshots: Snapshot[] = [];
  private timer: NodeJS.Timeout | undefined;
  private busy: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly targets: readonly ScrapeTarget[],
    private readonly timeoutMs = 2000,
  ) {}

  async scrapeNow(): Promise<Snapshot> {
    const at = Date.now();
    const results = await Promise.all(this.targets.map(async (t) => [t.name, await scrapeOne(t, this.timeoutMs)] as const));
    const services: Record<string, Sample[]> = {};
    for (const [name, samples] of results) if (samples) services[name] = samples;
    const snap = { at, services };
    this.snapshots.push(snap);
    this.snapshots.sort((a, b) => a.at - b.at);
    return snap;
  }

  start(intervalMs = 1000): void {
    this.stop();
    let inFlight = false;
    this.timer = setInterval(() => {
      // One scrape at a time, and a tick that finds one still going is skipped: an overloaded
      // service (2 s per scrape, its timeout) must not pile them up. Chained instead, they ran on
      // for ~20 s after the load (stop() waits for them), each stamped long after its tick.
      if (inFlight) return;
      inFlight = true;
      this.busy = this.scrapeNow().finally(() => (inFlight = false));
    }, intervalMs);
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.busy;
  }

  /** The snapshot nearest to `t` that has `service` (undefined if none does). */
  nearest(t: number, service: string): Snapshot | undefined {
    let best: Snapshot | undefined;
    for (const s of this.snapshots) {
      if (!s.services[service]) continue;
      if (!best || Math.abs(s.at - t) < Math.abs(best.at - t)) best = s;
    }
    return best;
  }

  /** Increase of a counter in one service between two instants (nearest snapshots). */
  delta(service: string, from: number, to: number, name: string, labels: Record<string, string> = {}): number {
    const a = this.nearest(from, service);
    const b = this.nearest(to, service);
    if (!a || !b) return 0;
    return Math.max(0, sumOf(b.services[service]!, name, labels) - sumOf(a.services[service]!, name, labels));
  }

  /** The same increase summed over every service. */
  deltaAll(from: number, to: number, name: string, labels: Record<string, string> = {}): number {
    return this.targets.reduce((s, t) => s + this.delta(t.name, from, to, name, labels), 0);
  }

  /** A gauge (or counter) summed over services, from the latest snapshot. */
  latestSum(name: string, labels: Record<string, string> = {}): number {
    const last = this.snapshots.at(-1);
    if (!last) return 0;
    return Object.values(last.services).reduce((s, samples) => s + sumOf(samples, name, labels), 0);
  }
}
