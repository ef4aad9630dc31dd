import { Code, ConnectError } from "@connectrpc/connect";
import { pushbackHeaders } from "@platform/resilience";
import type { StreamConfig } from "../config/server-config.js";
import { streamMetrics } from "../observability/metrics.js";

/** How long a refused stream's caller is told to wait before it tries again. */
const streamPushbackMs = 1000;

/**
 * The admission class of server streams, apart from the unary calls' slots
 * (admission-gate.ts): a stream holds its slot for minutes, so it must never
 * take one a PlaceOrder needs. Bounded per process and per caller; a new
 * stream beyond either is refused at once with RESOURCE_EXHAUSTED and a
 * pushback hint, never queued (a watcher can come back; a queued one would
 * wait for another to end, which may take the whole stream lifetime).
 */
export class StreamAdmission {
  private open = 0;
  private readonly byCaller = new Map<string, number>();
  private readonly metrics = streamMetrics(() => this.open);

  constructor(private readonly config: Pick<StreamConfig, "maxConcurrent" | "maxPerCaller">) {}

  /** Takes a stream slot for `caller` (undefined: counted only against the process), or throws the refusal; the returned release is idempotent. */
  admit(caller: string | undefined): () => void {
    const mine = caller === undefined ? 0 : (this.byCaller.get(caller) ?? 0);
    if (this.open >= this.config.maxConcurrent) {
      this.metrics.refused.inc({ reason: "process" });
      throw new ConnectError(`too many open streams (${this.config.maxConcurrent}); retry later`, Code.ResourceExhausted, pushbackHeaders(streamPushbackMs));
    }
    if (mine >= this.config.maxPerCaller) {
      this.metrics.refused.inc({ reason: "caller" });
      throw new ConnectError(
        `too many open streams for this caller (${this.config.maxPerCaller}); close one or retry later`,
        Code.ResourceExhausted,
        pushbackHeaders(streamPushbackMs),
      );
    }
    this.open++;
    if (caller !== undefined) this.byCaller.set(caller, mine + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.open--;
      if (caller === undefined) return;
      const left = (this.byCaller.get(caller) ?? 1) - 1;
      if (left === 0) this.byCaller.delete(caller);
      else this.byCaller.set(caller, left);
    };
  }

  stats(): { open: number; callers: number } {
    return { open: this.open, callers: this.byCaller.size };
  }
}
