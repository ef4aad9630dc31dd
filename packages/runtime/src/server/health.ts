import { EventEmitter } from "node:events";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter, type HandlerContext } from "@connectrpc/connect";
import { healthV1 } from "@platform/proto";
import { dependencyRestarting, waitingForRestartHeader } from "../client/restart-signal.js";

const { Health, HealthCheckResponseSchema, HealthCheckResponse_ServingStatus: Status } = healthV1;

/** What a service's APIs need of their own to serve, e.g. its database (the database package's `databaseResources`). */
export interface OwnResources {
  /** Resolves when they serve (one statement answered); rejects when they do not. */
  check(): Promise<void>;
  /** The name of one whose server refuses connections while it restarts, and which calls wait for; undefined when none does. */
  restarting(): string | undefined;
}

/**
 * The serving state of one process, shared by grpc.health.v1 (Kubernetes'
 * native gRPC probes, grpc-health-probe) and the plain HTTP /readyz endpoint
 * (compose healthchecks). "" is the whole server; each served API has its
 * own entry too, as the gRPC health protocol expects.
 */
export class HealthState {
  private readonly statuses = new Map<string, boolean>();
  private readonly events = new EventEmitter();
  /** The answer of the last own-resources check, shared by the checks that ask within `checkCacheMs` of it. */
  private lastCheck: { at: number; result: Promise<boolean> } | undefined;

  /**
   * @param ownResources What this service's APIs need of their own to
   *   serve: checked when a caller checks an API's health (not the whole
   *   server's, ""), so that a caller whose circuit breaker opened on this
   *   service can see it recover (resilience's breaker-probe.ts). Concurrent
   *   and close checks share one run. Orchestrators ask about "" and never
   *   run it: a pod whose database is down stays in its Service.
   */
  constructor(
    services: string[],
    private readonly ownResources?: OwnResources,
  ) {
    this.statuses.set("", false);
    for (const s of services) this.statuses.set(s, false);
    this.events.setMaxListeners(0);
  }

  /** What this service waits out a restart of now: its own resource, or a dependency's (restart-signal.ts). */
  waitingFor(): string | undefined {
    return this.ownResources?.restarting() ?? dependencyRestarting();
  }

  /** `service`'s status as a caller's check sees it: its own entry, and for an API of a ready server also its own resources. */
  async check(service: string): Promise<boolean | undefined> {
    const serving = this.get(service);
    if (serving !== true || service === "" || this.ownResources === undefined) return serving;
    // A resource that refuses connections would not answer the check before the caller gives up.
    if (this.ownResources.restarting() !== undefined) return false;
    const now = performance.now();
    if (this.lastCheck === undefined || now - this.lastCheck.at > checkCacheMs) {
      this.lastCheck = {
        at: now,
        result: this.ownResources.check().then(
          () => true,
          () => false,
        ),
      };
    }
    return this.lastCheck.result;
  }

  /** Marks the server and every API serving (true) or not (false). */
  setAll(serving: boolean): void {
    for (const name of this.statuses.keys()) this.set(name, serving);
  }

  set(service: string, serving: boolean): void {
    if (this.statuses.get(service) === serving) return;
    this.statuses.set(service, serving);
    this.events.emit("change", service);
  }

  /** undefined for a service this server does not know. */
  get(service: string): boolean | undefined {
    return this.statuses.get(service);
  }

  get ready(): boolean {
    return this.statuses.get("") === true;
  }

  entries(): [string, boolean][] {
    return [...this.statuses];
  }

  onChange(listener: (service: string) => void): () => void {
    this.events.on("change", listener);
    return () => this.events.off("change", listener);
  }
}

/** How long one run of the own-resources check answers every caller's check: a few callers probing every 200 ms cost one run per this. */
const checkCacheMs = 100;

function statusOf(serving: boolean | undefined) {
  if (serving === undefined) return Status.SERVICE_UNKNOWN;
  return serving ? Status.SERVING : Status.NOT_SERVING;
}

/** Registers grpc.health.v1.Health (Check, List, Watch) on a router. */
export function registerHealthService(router: ConnectRouter, state: HealthState): void {
  router.service(Health, {
    async check(req, ctx) {
      // What its calls wait out, so that a caller with overdue calls waits too (restart-signal.ts).
      const waitingFor = state.waitingFor();
      if (waitingFor !== undefined) ctx.responseHeader.set(waitingForRestartHeader, waitingFor);
      const serving = await state.check(req.service);
      if (serving === undefined) throw new ConnectError(`unknown service "${req.service}"`, Code.NotFound);
      return { status: statusOf(serving) };
    },
    list() {
      return {
        statuses: Object.fromEntries(state.entries().map(([name, serving]) => [name, create(HealthCheckResponseSchema, { status: statusOf(serving) })])),
      };
    },
    async *watch(req, ctx: HandlerContext) {
      // Sends the current status, then every change, until the caller leaves.
      let changed: (() => void) | undefined;
      const off = state.onChange((name) => {
        if (name === req.service) changed?.();
      });
      try {
        let last: number | undefined;
        while (!ctx.signal.aborted) {
          const now = statusOf(state.get(req.service));
          if (now !== last) {
            last = now;
            yield { status: now };
          }
          await new Promise<void>((resolve) => {
            changed = resolve;
            ctx.signal.addEventListener("abort", () => resolve(), { once: true });
          });
        }
      } finally {
        off();
      }
    },
  });
}
