import type * as http from "node:http";
import type * as http2 from "node:http2";
import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import type { CriticalityPolicy } from "../server/admission-gate.js";
import { handleCors, type CorsConfig } from "./cors.js";
import { authenticate, type AuthConfig } from "./edge-auth.js";
import { createIntake, type Intake, type IntakeConfig } from "./intake.js";
import type { Logger } from "../observability/logger.js";
import { RateLimiter, type RateLimitConfig } from "./rate-limit.js";
import type { RequestContext } from "../server/request-context.js";
import { refusalError } from "../refusals.js";

type Req = http.IncomingMessage | http2.Http2ServerRequest;
type Res = http.ServerResponse | http2.Http2ServerResponse;

export interface EdgeOptions {
  auth: AuthConfig;
  rateLimit: RateLimitConfig;
  cors: CorsConfig;
  /** The intake controller (metastable recovery); off when absent or not enabled. */
  intake?: IntakeConfig;
  /** The edge assigns each request's criticality (a client cannot choose); inner hops take it from the wire. */
  criticality: CriticalityPolicy;
}

/**
 * What only the public edge adds to serve(): CORS for browsers, API-key
 * authentication (the caller identity inner hops trust), a rate limit per
 * client, the criticality of each request, and the intake controller. The
 * gateway composes it (`serve({ edge: createEdge(...) })`); inner services
 * run serve()'s core alone.
 */
export interface ServerEdge {
  /** Answers a plain-HTTP request before the RPC adapter sees it (a CORS preflight); true when answered. */
  answerHttp(req: Req, res: Res): boolean;
  /**
   * Checks from the headers alone, first in the request gate (before the
   * body is read, "starting" and admission): authentication, then the
   * client's rate limit. Throws the refusal as a ConnectError.
   */
  check(context: HandlerContext, request: RequestContext): void;
  criticality: CriticalityPolicy;
  /** Starts the intake controller, if configured (serve() wires it into admission and the outcomes). */
  startIntake(logger: Logger): Intake | undefined;
}

export function createEdge(opts: EdgeOptions): ServerEdge {
  const limiter = new RateLimiter(opts.rateLimit);
  return {
    answerHttp: (req, res) => handleCors(opts.cors, req, res),
    check(context, request) {
      const auth = authenticate(opts.auth, context.requestHeader);
      if (!auth.ok) throw new ConnectError(auth.message, Code.Unauthenticated);
      // Inner services trust the caller the edge sends them; only the edge decides it.
      request.caller = auth.caller;
      const client = opts.auth.mode === "none" ? (request.exchange?.req.socket?.remoteAddress ?? "unknown") : auth.caller;
      const waitMs = limiter.take(client);
      if (waitMs > 0)
        throw refusalError("rate limit exceeded for this client; slow down", Code.ResourceExhausted, { reason: "RATE_LIMITED", retryAfterMs: waitMs });
    },
    criticality: opts.criticality,
    startIntake: (logger) => (opts.intake?.enabled ? createIntake(opts.intake, logger) : undefined),
  };
}
