import { EventEmitter } from "node:events";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter, type HandlerContext } from "@connectrpc/connect";
import { healthV1 } from "@platform/proto";

const { Health, HealthCheckResponseSchema, HealthCheckResponse_ServingStatus: Status } = healthV1;

/**
 * The serving state of one process, shared by grpc.health.v1 (Kubernetes'
 * native gRPC probes, grpc-health-probe) and the plain HTTP /readyz endpoint
 * (compose healthchecks). "" is the whole server; each served API has its
 * own entry too, as the gRPC health protocol expects.
 */
export class HealthState {
  private readonly statuses = new Map<string, boolean>();
  private readonly events = new EventEmitter();

  constructor(services: string[]) {
    this.statuses.set("", false);
    for (const s of services) this.statuses.set(s, false);
    this.events.setMaxListeners(0);
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

function statusOf(serving: boolean | undefined) {
  if (serving === undefined) return Status.SERVICE_UNKNOWN;
  return serving ? Status.SERVING : Status.NOT_SERVING;
}

/** Registers grpc.health.v1.Health (Check, List, Watch) on a router. */
export function registerHealthService(router: ConnectRouter, state: HealthState): void {
  router.service(Health, {
    check(req) {
      const serving = state.get(req.service);
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
