import type { Clock } from "@platform/resilience";
import { PeakEwma } from "./peak-ewma.js";

/** Something that can be closed: a replica's connection. */
export interface Closable {
  close(): void;
}

/**
 * One address of a dependency: its connection (opened on first use), the
 * calls outstanding on it and its latency estimate. A vanished address is
 * drained: it gets no new calls, and its connection closes once the calls
 * on it have ended.
 */
export class Endpoint<C extends Closable = Closable> {
  readonly latency: PeakEwma;
  draining = false;
  /** Calls ended here, by outcome (metrics). */
  readonly outcomes: Record<"ok" | "failure" | "refused" | "cancelled", number> = { ok: 0, failure: 0, refused: 0, cancelled: 0 };
  /** Start times of the calls outstanding on this replica. */
  private readonly started: number[] = [];
  private conn: C | undefined;

  constructor(
    readonly origin: string,
    private readonly clock: Clock,
    private readonly open: (origin: string) => C,
  ) {
    this.latency = new PeakEwma(clock);
  }

  get connection(): C {
    this.conn ??= this.open(this.origin);
    return this.conn;
  }

  get outstanding(): number {
    return this.started.length;
  }

  /** A call starts on this replica; the returned function ends it and says how long it took. */
  begin(): () => number {
    const at = this.clock.now();
    this.started.push(at);
    let ended = false;
    return () => {
      if (!ended) {
        ended = true;
        this.started.splice(this.started.indexOf(at), 1);
      }
      return this.clock.now() - at;
    };
  }

  /**
   * What a new call is expected to cost here: the latency estimate times the
   * calls it would queue behind (Finagle's and Linkerd's peak-EWMA cost).
   * The oldest outstanding call's age bounds the estimate from below, so a
   * replica that stopped answering looks slower with every moment, even
   * before any of its calls end.
   */
  cost(averageMs: number): number {
    const oldest = this.started.length > 0 ? this.clock.now() - this.started[0]! : 0;
    return Math.max(this.latency.estimateMs ?? averageMs, oldest, 0.001) * (this.started.length + 1);
  }

  close(): void {
    this.conn?.close();
    this.conn = undefined;
  }
}
