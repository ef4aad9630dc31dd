/**
 * What a client of the platform does with each error code: the same advice
 * for the Node and the browser examples. Every code the gateway documents
 * is here (README, "Calling the platform"); anything else is a bug to report.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { retryInfoDelayMs } from "@platform/client";

export interface ErrorAdvice {
  /** The code's wire name, as in the README: "invalid_argument". */
  code: string;
  /** Whether repeating the same call (with the same idempotency key) can succeed. */
  retryable: boolean;
  /** How long the server asked us to wait first, when it said (resource_exhausted, unavailable). */
  retryAfterMs?: number;
  advice: string;
}

/** "InvalidArgument" -> "invalid_argument", the name curl and buf curl users see. */
export function codeName(code: Code): string {
  return Code[code].replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase();
}

/**
 * The pushback hint: `grpc-retry-pushback-ms` (milliseconds) or `Retry-After`
 * (seconds), else the RetryInfo detail (docs/errors.md; a browser may not
 * see headers the server's CORS policy does not expose, but always sees details).
 */
function retryAfterMs(err: ConnectError): number | undefined {
  const ms = Number(err.metadata.get("grpc-retry-pushback-ms") ?? NaN);
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const s = Number(err.metadata.get("retry-after") ?? NaN);
  return Number.isFinite(s) && s >= 0 ? s * 1000 : retryInfoDelayMs(err);
}

export function adviceFor(error: unknown): ErrorAdvice {
  const err = ConnectError.from(error);
  const code = codeName(err.code);
  switch (err.code) {
    case Code.InvalidArgument:
      return { code, retryable: false, advice: `the request is wrong (${err.rawMessage}): fix it, do not retry` };
    case Code.NotFound:
      return { code, retryable: false, advice: `no such thing (${err.rawMessage})` };
    case Code.AlreadyExists:
      return { code, retryable: false, advice: "this idempotency key was used for a different order: use a new key for a new order" };
    case Code.Unauthenticated:
      return { code, retryable: false, advice: "send an API key: Authorization: Bearer <key>" };
    case Code.ResourceExhausted: {
      const wait = retryAfterMs(err);
      return {
        code,
        retryable: true,
        ...(wait !== undefined ? { retryAfterMs: wait } : {}),
        advice: `too many requests or too large a body: retry after ${wait ?? "a backoff"} ms with the same idempotency key`,
      };
    }
    case Code.Unavailable: {
      const wait = retryAfterMs(err);
      return {
        code,
        retryable: true,
        ...(wait !== undefined ? { retryAfterMs: wait } : {}),
        advice: "the platform cannot serve this now: retry later, with backoff and the same idempotency key",
      };
    }
    case Code.DeadlineExceeded:
      return { code, retryable: true, advice: "no answer in time; an order may or may not have been placed: retry with the same idempotency key to find out" };
    default:
      return { code, retryable: false, advice: `unexpected (${err.rawMessage}): report it with the response's x-request-id` };
  }
}
