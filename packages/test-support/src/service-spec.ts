/**
 * What the services' unit specs (services/<name>/src/<name>-service.spec.ts)
 * share, in the style of connect-es's own examples: the implementation
 * under test is served by a real Connect router over an in-memory
 * transport, and each API it depends on is a small, real Connect server
 * too (a routes function), not a mock of our code.
 *
 * Two ways to serve a downstream API:
 * - `inMemoryClient(service, routes)`: a typed client whose calls go to
 *   `routes` through createRouterTransport: no socket. The default.
 * - `startDownstream(routes)`: the same routes behind a real h2c Connect
 *   server on a free loopback port, for the one thing an in-memory
 *   transport cannot show: what the platform's own dependency client
 *   (createDependencyClient, which dials a URL) sends downstream, such as
 *   the deadline.
 */
import { createServer, type Http2Server, type ServerHttp2Session } from "node:http2";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import type { DescService } from "@bufbuild/protobuf";
import { createClient, createRouterTransport, type Client, type ConnectRouter, type HandlerContext } from "@connectrpc/connect";
import { connectNodeAdapter, createGrpcTransport } from "@connectrpc/connect-node";
import { validationInterceptor } from "@platform/proto/validation";
import pg from "pg";

export type Routes = (router: ConnectRouter) => void;

/**
 * A typed client whose calls are served by `routes` in memory, through
 * Connect's router (serialisation, errors and headers included), behind the
 * proto's declared rules as serve() checks them (validation.ts).
 */
export function inMemoryClient<T extends DescService>(service: T, routes: Routes): Client<T> {
  return createClient(service, createRouterTransport(routes, { router: { interceptors: [validationInterceptor()] } }));
}

export interface Downstream {
  /** http://127.0.0.1:<port>: what a DependencyConfig's baseUrl points at. */
  readonly baseUrl: string;
  close(): Promise<void>;
}

/** Serves `routes` on a real h2c Connect server (gRPC, gRPC-Web, Connect) on a free loopback port. */
export async function startDownstream(routes: Routes): Promise<Downstream> {
  const server: Http2Server = createServer(connectNodeAdapter({ routes }));
  // Open sessions (the dependency client's pooled connection) would keep close() waiting.
  const sessions = new Set<ServerHttp2Session>();
  server.on("session", (s) => {
    sessions.add(s);
    s.once("close", () => sessions.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sessions) s.destroy();
      }),
  };
}

/** What a downstream handler saw of one call: enough to assert on the deadline, the cancellation and the headers that crossed the hop. */
export interface SeenCall<I> {
  request: I;
  /** The deadline the call arrived with (Connect's `ctx.timeoutMs()` at the start of the handler), or undefined without one. */
  timeoutMs: number | undefined;
  headers: Headers;
  /** Set when the call's signal aborted (its deadline passed, or the caller went away) while the handler ran: the downstream saw the timeout. */
  aborted: boolean;
  /**
   * Resolves with true once the call's signal aborts. The downstream's own
   * timer starts when the call arrives, a moment after the caller's: it may
   * fire just after the caller has its answer, so tests wait for it.
   */
  whenAborted(): Promise<boolean>;
}

/** How long whenAborted() waits: far beyond any deadline the specs use, a bound against a hang, not a speed claim. */
const abortWaitMs = 5000;

/** Records the calls a downstream handler receives. */
export class CallLog<I> {
  readonly calls: SeenCall<I>[] = [];

  /** Records the call; returns its entry (whose `aborted` is set if the caller's side goes away later). */
  record(request: I, ctx: HandlerContext): SeenCall<I> {
    const abort = new Promise<boolean>((resolve) => {
      if (ctx.signal.aborted) resolve(true);
      ctx.signal.addEventListener("abort", () => resolve(true), { once: true });
    });
    const seen: SeenCall<I> = {
      request,
      timeoutMs: ctx.timeoutMs(),
      headers: new Headers(ctx.requestHeader),
      aborted: ctx.signal.aborted,
      // Bounded: a signal that never aborts fails the test instead of hanging it.
      whenAborted: () => Promise.race([abort, sleep(abortWaitMs, false, { ref: false })]),
    };
    void abort.then(() => (seen.aborted = true));
    this.calls.push(seen);
    return seen;
  }

  clear(): void {
    this.calls.length = 0;
  }
}

/**
 * Never answers: waits until the call's signal aborts (its deadline passed
 * or the caller went away), then throws what the signal carries. This is
 * how a downstream that is too slow looks from above.
 */
export function untilAborted(ctx: HandlerContext): Promise<never> {
  return new Promise<never>((_, reject) => {
    if (ctx.signal.aborted) reject(ctx.signal.reason);
    ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason), { once: true });
  });
}

/** A client of a server listening on `port` (serve()'s RunningServer.port), over gRPC on h2c, as the next hop up calls it. */
export function grpcClient<T extends DescService>(service: T, port: number): Client<T> {
  return createClient(service, createGrpcTransport({ baseUrl: `http://127.0.0.1:${port}` }));
}

/**
 * Holds an ACCESS EXCLUSIVE lock on `table` from another connection until
 * the returned release is called: every statement touching the table waits,
 * which is how a slow database looks to the service, with no fault hook.
 */
export async function lockTable(databaseUrl: string, table: string): Promise<() => Promise<void>> {
  const locker = new pg.Client({ connectionString: databaseUrl });
  await locker.connect();
  await locker.query("BEGIN");
  await locker.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
  return async () => {
    await locker.query("ROLLBACK").catch(() => {});
    await locker.end();
  };
}
