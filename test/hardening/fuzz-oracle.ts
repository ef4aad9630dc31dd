/**
 * The fuzz's oracle: what a definite, prompt answer to one request is.
 *
 * Every input, malformed or not, gets a definite answer: a documented code
 * with a message (invalid_argument, resource_exhausted, unimplemented, the
 * service's own not_found / already_exists, ok), or the protocol's own
 * refusal (a plain 404, 405, 415...). Never a deadline and never
 * `unavailable`, unless the case itself asked for a short deadline: a hostile
 * input that stalls until the watchdog answers at the deadline fails here
 * (the lone-surrogate bug was exactly that). The one INTERNAL the gRPC spec
 * asks for (a frame flagged compressed on a request that declares no
 * encoding) is expected exactly there.
 *
 * And promptly: within `promptRatio` times the 99th percentile of the
 * successful requests of the same run, sent by the same client at the same
 * concurrency; a short deadline the case asked for is added to its bound.
 */
import { parseTimeoutHeader } from "@platform/resilience";
import type { BuiltCase, CaseSpec } from "./fuzz-cases.js";
import type { RpcOutcome } from "./wire.js";

/** A case whose own deadline is at most this is allowed to end at it (deadline_exceeded, or unavailable from a hop that could not fit it). */
export const shortDeadlineMs = 1000;
/** An answer may take at most this many times the successful requests' p99 in the same run. */
export const promptRatio = 10;

export interface Answer {
  seed: number;
  index: number;
  spec: CaseSpec;
  built: BuiltCase;
  outcome?: RpcOutcome;
  transportError?: string;
  /** From sending to the whole answer read (or the transport error). */
  ms: number;
}

/** Definite gRPC codes: ok, invalid_argument, not_found, already_exists, resource_exhausted, unimplemented. */
const definiteGrpc = new Set([0, 3, 5, 6, 8, 12]);
/** The same as Connect code names, with the HTTP status the Connect protocol gives each. */
const definiteConnect: Record<string, number> = {
  invalid_argument: 400,
  not_found: 404,
  already_exists: 409,
  resource_exhausted: 429,
  unimplemented: 501,
};
/** Allowed only when the case asked for a short deadline. */
const shortDeadlineGrpc = new Set([4, 14]);
const shortDeadlineConnect: Record<string, number> = { deadline_exceeded: 504, unavailable: 503 };
/** Refusals below the RPC layer (no RPC error body): unknown path, method not allowed, unsupported media type, headers too large. */
const plainHttp = new Set([400, 404, 405, 415, 431]);

/**
 * The deadline the case asked for, when it is short (ms); both timeout
 * headers count, as the platform reads both. HTTP strips a field value's
 * surrounding whitespace (RFC 9110 5.5), so " 100" asks for 100 ms.
 */
export function shortDeadline(spec: CaseSpec): number | undefined {
  if (!spec.timeout) return undefined;
  const parsed = parseTimeoutHeader(spec.timeout.name, spec.timeout.value.replace(/^[ \t]+|[ \t]+$/g, ""));
  return parsed.ok && parsed.ms <= shortDeadlineMs ? parsed.ms : undefined;
}

/** A gRPC or gRPC-Web frame flagged compressed (bit 0) while the request declares no grpc-encoding: INTERNAL, per the gRPC compression spec. */
export function compressedWithoutEncoding(spec: CaseSpec): boolean {
  return (
    (spec.protocol === "grpc" || spec.protocol === "grpc-web") &&
    spec.framing.kind === "flags" &&
    (spec.framing.flags & 1) === 1 &&
    !("grpc-encoding" in spec.extraHeaders)
  );
}

/** The server's limits the oracle judges by. */
export interface ServerLimits {
  /** READ_MAX_BYTES: the largest request body read. */
  readMaxBytes: number;
  /** The largest header section, advertised over HTTP/2 as SETTINGS_MAX_HEADER_LIST_SIZE. */
  maxHeaderBytes: number;
}

/** What is wrong with one answer's code, or undefined when it is a definite one. */
export function codeViolation(a: Answer, limits: ServerLimits): string | undefined {
  if (a.transportError)
    return closedOnOversizedUpload(a, limits.readMaxBytes) || refusedOversizedHeaders(a, limits.maxHeaderBytes) ? undefined : `no answer: ${a.transportError}`;
  const o = a.outcome!;
  const short = shortDeadline(a.spec) !== undefined;
  if (o.protocol === "http") return plainHttp.has(o.status) ? undefined : `undocumented plain HTTP ${o.status}`;
  if (!o.rpc) return `HTTP ${o.status} ${o.protocol} answer without an RPC status`;
  const { code, message } = o.rpc;
  if (o.protocol === "connect") {
    if (code === "ok") return o.status === 200 ? undefined : `ok with HTTP ${o.status}`;
    const status = definiteConnect[String(code)] ?? (short ? shortDeadlineConnect[String(code)] : undefined);
    if (status === undefined) return `not a definite answer: Connect ${String(code)} (HTTP ${o.status}): ${message}`;
    if (status !== o.status) return `Connect code ${String(code)} with HTTP ${o.status}, expected ${status}`;
  } else {
    if (o.status !== 200) return `${o.protocol} status ${String(code)} with HTTP ${o.status}`;
    if (code === 0) return undefined;
    const allowed =
      definiteGrpc.has(Number(code)) || (short && shortDeadlineGrpc.has(Number(code))) || (Number(code) === 13 && compressedWithoutEncoding(a.spec));
    if (!allowed) return `not a definite answer: grpc-status ${String(code)}: ${message}`;
  }
  if (message.trim() === "") return `error ${String(code)} without a message`;
  return undefined;
}

/**
 * HTTP/1.1 lets a server refuse a body too large to read and close the
 * connection (RFC 9110, 413). The gateway does so for gRPC-Web past
 * readMaxBytes (connect-node stops reading); a client still uploading may
 * then see the connection reset before it reads the RESOURCE_EXHAUSTED
 * answer. Accepted, and counted, for such bodies only.
 */
export function closedOnOversizedUpload(a: Answer, readMaxBytes: number): boolean {
  return a.spec.http === "h1" && a.built.request.body.length > readMaxBytes && /EPIPE|ECONNRESET|socket hang up/.test(a.transportError ?? "");
}

/**
 * HTTP/2 has no 431 once a header section is past the limit the server
 * advertised (SETTINGS_MAX_HEADER_LIST_SIZE): node's server resets the
 * stream with ENHANCE_YOUR_CALM (11) before any handler sees it, and gRPC
 * and Connect clients report that reset as resource_exhausted (the gRPC
 * HTTP/2 mapping). A Connect GET carries its message in the URL, so a large
 * enough message gets there. Accepted for such requests only; RFC 9113
 * counts each field as name + value + 32 bytes.
 */
export function refusedOversizedHeaders(a: Answer, maxHeaderBytes: number): boolean {
  if (a.spec.http !== "h2" || !/RST_STREAM 11\b/.test(a.transportError ?? "")) return false;
  const { request } = a.built;
  const fields: [string, string][] = [[":method", request.method], [":path", request.path], ...Object.entries(request.headers)];
  return fields.reduce((n, [k, v]) => n + k.length + String(v).length + 32, 0) > maxHeaderBytes;
}

function isOk(a: Answer): boolean {
  return a.outcome?.rpc?.code === "ok" || a.outcome?.rpc?.code === 0;
}

/** The q-quantile of the successful requests' times, the run's yardstick. */
export function okQuantile(answers: Answer[], q: number): number {
  const ms = answers
    .filter(isOk)
    .map((a) => a.ms)
    .sort((x, y) => x - y);
  if (ms.length === 0) throw new Error("no successful request in the run: no yardstick for promptness");
  return ms[Math.min(ms.length - 1, Math.floor(q * ms.length))]!;
}

/** What is wrong with one answer's timing, or undefined when it came within the bound. */
export function lateness(a: Answer, referenceMs: number): string | undefined {
  const bound = promptRatio * referenceMs + (shortDeadline(a.spec) ?? 0);
  if (a.ms <= bound) return undefined;
  return `answered after ${(a.ms / referenceMs).toFixed(1)}x the successful requests' p99 (bound ${promptRatio}x${shortDeadline(a.spec) !== undefined ? " plus its own deadline" : ""})`;
}
