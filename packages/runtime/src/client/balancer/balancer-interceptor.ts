import { Code, ConnectError, createContextKey, type Interceptor, type StreamResponse } from "@connectrpc/connect";
import type { Closable, Endpoint } from "./endpoint.js";
import type { Balancer } from "./balancer.js";
import type { ReplicaOutcome } from "./outlier-detector.js";

/**
 * The replicas a call's attempts went to so far, shared by the attempts of
 * one call (the retry loop and a hedge pass the same context): each new
 * attempt goes to another replica while there is one.
 */
const triedKey = createContextKey<Set<string> | undefined>(undefined, { description: "replicas this call was sent to" });

/**
 * The innermost interceptor of a balanced dependency client: it sends each
 * attempt to the replica the balancer picks (by rewriting the URL's origin;
 * the transport's HTTP client holds one connection per origin), counts it
 * as outstanding there until its response ends, and tells the balancer how
 * it went. A unary call whose connection was refused was never sent, so it
 * goes to another replica at once, as gRPC's transparent retry does; that
 * is no retry in the policy's sense (the request never reached a server).
 */
export function balancerInterceptor<C extends Closable>(dependency: string, balancer: Balancer<C>): Interceptor {
  return (next) => async (req) => {
    // Only until the first resolution: no await per call after it.
    if (!balancer.hasAddresses()) await balancer.ready();
    let tried = req.contextValues.get(triedKey);
    if (tried === undefined) {
      tried = new Set();
      req.contextValues.set(triedKey, tried);
    }
    let refused: unknown;
    for (;;) {
      const endpoint = balancer.pick(tried);
      if (endpoint === undefined) throw noAddress(dependency, req.url, balancer.resolveError());
      // After a refusal, only a replica not yet tried is worth it.
      if (refused !== undefined && tried.has(endpoint.origin)) throw refused;
      tried.add(endpoint.origin);
      const end = endpoint.begin();
      try {
        const res = await next({ ...req, url: rebase(req.url, endpoint.origin) });
        if (!res.stream) {
          balancer.record(endpoint, "success", end());
          return res;
        }
        return { ...res, message: tracked(res.message, balancer, endpoint, end) } satisfies StreamResponse;
      } catch (e) {
        const outcome = outcomeOf(e);
        settle(balancer, endpoint, outcome, end());
        if (outcome === "refused" && !req.stream) {
          refused = e;
          continue;
        }
        throw e;
      }
    }
  };
}

function settle<C extends Closable>(balancer: Balancer<C>, endpoint: Endpoint<C>, outcome: ReplicaOutcome | "answered" | undefined, ms: number): void {
  if (outcome === undefined) balancer.release(endpoint);
  else if (outcome === "answered") balancer.record(endpoint, "success");
  else balancer.record(endpoint, outcome, ms);
}

async function* tracked<T, C extends Closable>(messages: AsyncIterable<T>, balancer: Balancer<C>, endpoint: Endpoint<C>, end: () => number): AsyncIterable<T> {
  let outcome: ReplicaOutcome | "answered" | undefined;
  try {
    yield* messages;
    outcome = "success";
  } catch (e) {
    outcome = outcomeOf(e);
    throw e;
  } finally {
    // A reader that stopped early said nothing about the replica.
    settle(balancer, endpoint, outcome, end());
  }
}

/**
 * What an error says about the replica: its connection was refused; it
 * failed (unavailable, out of time, broken); it answered (an application
 * error is an answer); or nothing (the caller cancelled).
 */
function outcomeOf(e: unknown): ReplicaOutcome | "answered" | undefined {
  const err = ConnectError.from(e);
  switch (err.code) {
    case Code.Canceled:
      return undefined;
    case Code.Unavailable:
      return connectionRefused(e) ? "refused" : "failure";
    case Code.DeadlineExceeded:
    case Code.Internal:
    case Code.Unknown:
    case Code.DataLoss:
      return "failure";
    default:
      return "answered";
  }
}

function connectionRefused(e: unknown): boolean {
  for (let c: unknown = e, depth = 0; c !== undefined && c !== null && depth < 5; depth++) {
    if ((c as { code?: unknown }).code === "ECONNREFUSED") return true;
    c = (c as { cause?: unknown }).cause;
  }
  return false;
}

/** The URL with the replica's origin in place of its own (the transport builds it as origin + path). */
function rebase(url: string, origin: string): string {
  const pathAt = pathStart(url);
  return origin + (pathAt === -1 ? "" : url.slice(pathAt));
}

/** The scheme, host and port of an absolute URL as written (everything before its path): a rebased URL's replica, without a URL parse. */
export function originOf(url: string): string {
  const pathAt = pathStart(url);
  return pathAt === -1 ? url : url.slice(0, pathAt);
}

function pathStart(url: string): number {
  return url.indexOf("/", url.indexOf("//") + 2);
}

function noAddress(dependency: string, url: string, cause: unknown): ConnectError {
  const why = cause instanceof Error ? `: ${cause.message}` : "";
  return new ConnectError(`${dependency}: no address resolved for ${new URL(url).host}${why}`, Code.Unavailable, undefined, undefined, cause);
}
