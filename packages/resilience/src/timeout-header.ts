/**
 * The two wire forms of a deadline.
 *
 * - gRPC and gRPC-Web: `grpc-timeout`, 1-8 ASCII digits and one unit
 *   (H hours, M minutes, S seconds, m milliseconds, u microseconds,
 *   n nanoseconds), see grpc/doc/PROTOCOL-HTTP2.md.
 * - Connect: `connect-timeout-ms`, 1-10 ASCII digits of milliseconds.
 *
 * Parsing is strict (a malformed deadline is the client's bug and must be
 * visible, not silently replaced) and returns a result instead of throwing
 * so that the runtime can count and log the reason before it answers.
 * Formatting always rounds DOWN: a callee must never believe it has more
 * time than its caller will wait.
 */

export type TimeoutHeaderName = "grpc-timeout" | "connect-timeout-ms";

export type ParsedTimeout = { ok: true; ms: number } | { ok: false; reason: string };

const grpcUnitMs = {
  H: 3_600_000,
  M: 60_000,
  S: 1_000,
  m: 1,
  u: 1e-3,
  n: 1e-6,
} as const satisfies Record<string, number>;

type GrpcUnit = keyof typeof grpcUnitMs;

function isGrpcUnit(c: string): c is GrpcUnit {
  return Object.hasOwn(grpcUnitMs, c);
}

const grpcMaxDigits = 8;
const connectMaxDigits = 10;

/**
 * Parses a deadline header into whole milliseconds. Sub-millisecond values
 * (`u`, `n`) are rounded down, so `999u` is 0 ms, i.e. already expired.
 * Zero is valid and means the deadline has already passed.
 * `name` is matched case-insensitively; any other header name is reported
 * as not ok rather than thrown, so callers may loop over header names.
 */
export function parseTimeoutHeader(name: TimeoutHeaderName | (string & {}), value: string): ParsedTimeout {
  const header = name.toLowerCase();
  if (header === "grpc-timeout") return parseGrpc(value);
  if (header === "connect-timeout-ms") return parseConnect(value);
  return { ok: false, reason: `unknown timeout header "${name}"` };
}

function parseGrpc(value: string): ParsedTimeout {
  const h = "grpc-timeout";
  if (value.length === 0) return { ok: false, reason: `${h} is empty` };
  if (value.startsWith("-")) return { ok: false, reason: `${h} is negative: "${value}"` };
  const unit = value.slice(-1);
  const digits = value.slice(0, -1);
  if (/^[0-9]+$/.test(value)) return { ok: false, reason: `${h} has no unit (expected one of H M S m u n): "${value}"` };
  if (!isGrpcUnit(unit)) {
    // A non-digit in the middle is more useful to report than the last char.
    if (!/^[0-9]*$/.test(digits)) return { ok: false, reason: `${h} has a non-digit value: "${value}"` };
    return { ok: false, reason: `${h} has an unknown unit "${unit}" (expected one of H M S m u n): "${value}"` };
  }
  if (digits.length === 0) return { ok: false, reason: `${h} has a unit but no digits: "${value}"` };
  if (!/^[0-9]+$/.test(digits)) return { ok: false, reason: `${h} has a non-digit value: "${value}"` };
  if (digits.length > grpcMaxDigits) return { ok: false, reason: `${h} has more than ${grpcMaxDigits} digits: "${value}"` };
  // Integer arithmetic for the coarse units keeps 99999999H exact; the
  // fine units are divided and floored.
  const n = Number(digits);
  const ms = unit === "u" ? Math.floor(n / 1_000) : unit === "n" ? Math.floor(n / 1_000_000) : n * grpcUnitMs[unit];
  return { ok: true, ms };
}

function parseConnect(value: string): ParsedTimeout {
  const h = "connect-timeout-ms";
  if (value.length === 0) return { ok: false, reason: `${h} is empty` };
  if (value.startsWith("-")) return { ok: false, reason: `${h} is negative: "${value}"` };
  if (!/^[0-9]+$/.test(value)) return { ok: false, reason: `${h} has a non-digit value: "${value}"` };
  if (value.length > connectMaxDigits) return { ok: false, reason: `${h} has more than ${connectMaxDigits} digits: "${value}"` };
  return { ok: true, ms: Number(value) };
}

/** Largest value of each unit that fits in 8 digits, coarsest last. */
const grpcFormatUnits: ReadonlyArray<readonly [GrpcUnit, number]> = [
  ["m", 1],
  ["S", 1_000],
  ["M", 60_000],
  ["H", 3_600_000],
];
const grpcMaxValue = 10 ** grpcMaxDigits - 1;

function checkOutgoing(ms: number): number {
  if (!Number.isFinite(ms) || ms <= 0) {
    // An expired or missing deadline must be handled before a call is made
    // (fail with DEADLINE_EXCEEDED, do not send); reaching here is a bug.
    throw new RangeError(`a timeout to send must be a positive finite number of ms, got ${ms}`);
  }
  // Round down, but never to 0: 0 is not a valid value on either wire.
  return Math.max(1, Math.floor(ms));
}

/**
 * Formats `ms` for `grpc-timeout`, choosing the finest unit whose value fits
 * in 8 digits. A coarser unit rounds down (100000999 ms is sent as
 * "100000S"), so the callee never gets more time than we have. Values above
 * 99999999 hours are clamped to that.
 */
export function formatGrpcTimeout(ms: number): string {
  const whole = checkOutgoing(ms);
  for (const [unit, factor] of grpcFormatUnits) {
    const v = Math.floor(whole / factor);
    if (v <= grpcMaxValue) return `${v}${unit}`;
  }
  return `${grpcMaxValue}H`;
}

/** Formats `ms` for `connect-timeout-ms`: whole milliseconds rounded down, at least 1, at most 10 digits. */
export function formatConnectTimeout(ms: number): string {
  const whole = checkOutgoing(ms);
  return String(Math.min(whole, 10 ** connectMaxDigits - 1));
}

export interface InboundDeadlineInput {
  /** The client's timeout from the parsed header; undefined when it sent none. */
  headerMs: number | undefined;
  /** Given to requests that arrive without a deadline. */
  defaultMs: number;
  /** No request may hold resources longer than this, whatever it asks for. */
  maxMs: number;
}

export interface InboundDeadline {
  timeoutMs: number;
  /** "client": as sent; "default": none sent; "capped": sent but above maxMs. Counted by the runtime (invariant 1, docs/architecture.md). */
  source: "client" | "default" | "capped";
}

/**
 * Decides the deadline of an inbound request: the client's when it sent
 * one (0 stays 0: already expired, to be refused with DEADLINE_EXCEEDED),
 * capped at `maxMs`; `defaultMs` when it sent none.
 * Throws RangeError for a configuration where the default exceeds the cap,
 * which the runtime should surface at startup rather than per request.
 */
export function resolveInboundDeadline(input: InboundDeadlineInput): InboundDeadline {
  const { headerMs, defaultMs, maxMs } = input;
  if (!(maxMs > 0) || !(defaultMs > 0) || defaultMs > maxMs) {
    throw new RangeError(`deadline config needs 0 < defaultMs <= maxMs, got defaultMs=${defaultMs} maxMs=${maxMs}`);
  }
  if (headerMs === undefined) return { timeoutMs: defaultMs, source: "default" };
  if (!(headerMs >= 0)) throw new RangeError(`headerMs must be a parsed, non-negative timeout, got ${headerMs}`);
  if (headerMs > maxMs) return { timeoutMs: maxMs, source: "capped" };
  return { timeoutMs: headerMs, source: "client" };
}
