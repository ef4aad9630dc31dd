import type * as http from "node:http";
import type * as http2 from "node:http2";
import { Code, type HandlerContext } from "@connectrpc/connect";
import type { CriticalityPolicy } from "../server/admission-gate.js";
import { handleCors, type CorsConfig } from "./cors.js";
import { createAuthenticator, type AuthConfig, type Identity } from "./edge-auth.js";
import { createIntake, type Intake, type IntakeConfig } from "./intake.js";
import type { Logger } from "../observability/logger.js";
import { RateLimiter, type RateLimitConfig } from "./rate-limit.js";
import { quotaExceeded, TenantQuotas, type TenantQuotaConfig } from "./tenant-quota.js";
import { TenantMetrics } from "./tenant-metrics.js";
import type { RequestContext } from "../server/request-context.js";
import { refusalError } from "../refusals.js";

type Req = http.IncomingMessage | http2.Http2ServerRequest;
type Res = http.ServerResponse | http2.Http2ServerResponse;

export interface EdgeOptions {
  auth: AuthConfig;
  rateLimit: RateLimitConfig;
  /** Per-tenant quotas; none when absent. */
  tenantQuota?: TenantQuotaConfig;
  cors: CorsConfig;
  /** The intake controller (metastable recovery); off when absent or not enabled. */
  intake?: IntakeConfig;
  /** The edge assigns each request's criticality (a client cannot choose); inner hops take it from the wire. */
  criticality: CriticalityPolicy;
  /** Told when the JWKS cannot be loaded (AUTH_MODE=jwt); the cached keys stay in use. */
  onKeyLoadFailure?: (e: Error) => void;
}

/**
 * What only the public edge adds to serve(): CORS for browsers,
 * authentication (API keys or JWTs: the caller identity inner hops trust),
 * a rate limit per client, a quota per tenant, the criticality of each
 * request, and the intake controller. The gateway composes it
 * (`serve({ edge: createEdge(...) })`); inner services run serve()'s core
 * alone.
 */
export interface ServerEdge {
  /** Answers a plain-HTTP request before the RPC adapter sees it (a CORS preflight); true when answered. */
  answerHttp(req: Req, res: Res): boolean;
  /**
   * Checks from the headers alone, first in the request gate (before the
   * body is read, "starting" and admission): authentication, the client's
   * rate limit, then its tenant's quota. Throws the refusal as a
   * ConnectError; returns a promise only when a token has to be verified.
   */
  check(context: HandlerContext, request: RequestContext): void | Promise<void>;
  criticality: CriticalityPolicy;
  /** Starts the intake controller, if configured (serve() wires it into admission and the outcomes). */
  startIntake(logger: Logger): Intake | undefined;
}

export function createEdge(opts: EdgeOptions): ServerEdge {
  const limiter = new RateLimiter(opts.rateLimit);
  const authenticator = createAuthenticator(opts.auth, opts.onKeyLoadFailure ? { onKeyLoadFailure: opts.onKeyLoadFailure } : {});
  const quotas = opts.tenantQuota ? new TenantQuotas(opts.tenantQuota) : undefined;
  const metrics = opts.tenantQuota ? new TenantMetrics(opts.tenantQuota.metricsTopN, opts.tenantQuota.overrides.keys()) : undefined;
  const admit = (identity: Identity, request: RequestContext) => {
    // Inner services trust the identity the edge sends them; only the edge decides it.
    // Without authentication everyone is one tenant: nothing to tell the hops inside.
    request.caller = identity.caller;
    if (opts.auth.mode !== "none") request.tenant = identity.tenant;
    const client = opts.auth.mode === "none" ? (request.exchange?.req.socket?.remoteAddress ?? "unknown") : identity.caller;
    const waitMs = limiter.take(client);
    if (waitMs > 0)
      throw refusalError("rate limit exceeded for this client; slow down", Code.ResourceExhausted, { reason: "RATE_LIMITED", retryAfterMs: waitMs });
    if (!quotas || !metrics) return;
    const quotaWaitMs = quotas.take(identity.tenant);
    metrics.count(identity.tenant, quotaWaitMs > 0 ? "over_quota" : "admitted");
    if (quotaWaitMs > 0) throw quotaExceeded(identity.tenant, quotas.quotaOf(identity.tenant), quotaWaitMs);
  };
  return {
    answerHttp: (req, res) => handleCors(opts.cors, req, res),
    check(context, request) {
      const identity = authenticator.authenticate(context.requestHeader, request.procedure);
      if (identity instanceof Promise) return identity.then((id) => admit(id, request));
      return admit(identity, request);
    },
    criticality: opts.criticality,
    startIntake: (logger) => (opts.intake?.enabled ? createIntake(opts.intake, logger) : undefined),
  };
}
