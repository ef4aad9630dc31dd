/**
 * Fault injection, part of the platform: the storm lab and the tests make a
 * database slow, a dependency fail or a handler stall at runtime, without a
 * restart, through a service's admin endpoint or the FAULTS variable.
 *
 * Off by default. When off, every check is one property read of a frozen
 * empty object: nothing measurable on the hot path.
 */
export interface FaultSpec {
  /** Added latency in ms before the work starts (abortable). */
  latencyMs?: number;
  /** Probability in [0, 1] that the work fails with an injected UNAVAILABLE. */
  errorRate?: number;
  /**
   * Calls to a dependency only: probability in [0, 1] that the call is made
   * and processed, but its response is lost (the caller sees UNAVAILABLE).
   * This is the failure that idempotency keys exist for.
   */
  dropResponseRate?: number;
  /** Apply to the next N events only, then stop (e.g. one failure, then success). Default: every event. */
  times?: number;
}

export interface DatabaseFaultSpec extends FaultSpec {
  /**
   * Every connection attempt fails as if the server were down. (Latency and
   * errors run as real statements on the server, so they cost what a slow
   * or failing database costs: a connection held, a statement to cancel.)
   */
  unreachable?: boolean;
}

export interface Faults {
  db?: DatabaseFaultSpec;
  handler?: FaultSpec;
  /** Keyed by dependency name, e.g. "stock". */
  dependencies?: Record<string, FaultSpec>;
}

const none: Faults = Object.freeze({});
let active: Faults = none;
/** Events left for specs with `times`, keyed by the (frozen) spec object. */
let remaining = new WeakMap<FaultSpec, number>();

/** The faults in force in this process. */
export function currentFaults(): Faults {
  return active;
}

/** Replaces the faults in force (validated first); `{}` turns everything off. */
export function setFaults(faults: Faults): void {
  active = Object.keys(faults).length === 0 ? none : Object.freeze(structuredClone(faults));
  remaining = new WeakMap();
}

/**
 * Whether `spec` applies to this event. Call once per event: for a spec with
 * `times`, each call that returns true uses one up.
 */
export function faultApplies(spec: FaultSpec | undefined): spec is FaultSpec {
  if (spec === undefined) return false;
  if (spec.times === undefined) return true;
  const left = remaining.get(spec) ?? spec.times;
  if (left <= 0) return false;
  remaining.set(spec, left - 1);
  return true;
}

/** True when `spec` asks this call to fail. */
export function shouldFail(spec: FaultSpec | undefined, random: () => number = Math.random): boolean {
  return spec?.errorRate !== undefined && spec.errorRate > 0 && random() < spec.errorRate;
}

/** True when `spec` asks for this call's response to be lost. */
export function shouldDropResponse(spec: FaultSpec | undefined, random: () => number = Math.random): boolean {
  return spec?.dropResponseRate !== undefined && spec.dropResponseRate > 0 && random() < spec.dropResponseRate;
}

/** Waits `spec.latencyMs`, or rejects early if `signal` aborts. */
export function injectedDelay(spec: FaultSpec | undefined, signal?: AbortSignal): Promise<void> | undefined {
  const ms = spec?.latencyMs ?? 0;
  if (ms <= 0) return undefined;
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * Parses and validates a faults document (JSON text or value). Throws an
 * Error whose message names the first bad field: bad input to an admin
 * endpoint gets a clear answer and changes nothing.
 */
export function parseFaults(input: unknown): Faults {
  const value: unknown = typeof input === "string" ? JSON.parse(input === "" ? "{}" : input) : input;
  const obj = record(value, "faults");
  const out: Faults = {};
  for (const key of Object.keys(obj)) {
    if (key === "db") out.db = databaseSpec(obj[key], "db");
    else if (key === "handler") out.handler = spec(obj[key], "handler");
    else if (key === "dependencies") {
      const deps = record(obj[key], "dependencies");
      out.dependencies = {};
      for (const [name, s] of Object.entries(deps)) out.dependencies[name] = spec(s, `dependencies.${name}`);
    } else throw new Error(`faults: unknown field "${key}" (expected db, handler, dependencies)`);
  }
  return out;
}

function record(v: unknown, path: string): Record<string, unknown> {
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw new Error(`${path} must be an object`);
  return v as Record<string, unknown>;
}

function spec(v: unknown, path: string, extra: string[] = []): FaultSpec {
  const o = record(v, path);
  const out: FaultSpec = {};
  for (const [k, val] of Object.entries(o)) {
    if (k === "latencyMs") {
      if (typeof val !== "number" || !Number.isInteger(val) || val < 0 || val > 600_000)
        throw new Error(`${path}.latencyMs must be an integer from 0 to 600000`);
      out.latencyMs = val;
    } else if (k === "errorRate" || k === "dropResponseRate") {
      if (typeof val !== "number" || !(val >= 0 && val <= 1)) throw new Error(`${path}.${k} must be a number from 0 to 1`);
      out[k] = val;
    } else if (k === "times") {
      if (typeof val !== "number" || !Number.isInteger(val) || val < 1) throw new Error(`${path}.times must be a positive integer`);
      out.times = val;
    } else if (!extra.includes(k)) {
      throw new Error(`${path}: unknown field "${k}" (expected latencyMs, errorRate, dropResponseRate, times${extra.map((e) => `, ${e}`).join("")})`);
    }
  }
  return out;
}

function databaseSpec(v: unknown, path: string): DatabaseFaultSpec {
  const out: DatabaseFaultSpec = spec(v, path, ["unreachable"]);
  const unreachable = (v as Record<string, unknown>)["unreachable"];
  if (unreachable !== undefined) {
    if (typeof unreachable !== "boolean") throw new Error(`${path}.unreachable must be true or false`);
    out.unreachable = unreachable;
  }
  return out;
}
