import { readFileSync } from "node:fs";
import { rememberLoadedConfig } from "./loaded-config.js";

/**
 * Environment configuration, validated at start.
 *
 * A service declares what it reads with the small readers below; `readEnv`
 * collects every problem (not just the first) and throws one ConfigError that
 * names each variable, so a bad deployment fails fast with a message an
 * operator can act on.
 */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join("\n  - ")}`);
    this.name = "ConfigError";
  }
}

type Env = Record<string, string | undefined>;

/**
 * Reads typed values from an environment and remembers what was wrong.
 *
 * Every variable can also be given as a file, the way Docker and Kubernetes
 * hand out secrets: `<VAR>_FILE=/run/secrets/x` reads the value from that
 * file (one trailing newline dropped), so a password never has to sit in
 * the environment, where `ps e`, /proc/<pid>/environ and crash dumps show it.
 * Setting both is an error, as is a file that cannot be read.
 */
export class EnvReader {
  readonly problems: string[] = [];
  constructor(private readonly env: Env) {}

  private raw(name: string): string | undefined {
    const v = this.env[name];
    const direct = v === undefined || v.trim() === "" ? undefined : v.trim();
    const file = this.env[`${name}_FILE`]?.trim();
    if (file === undefined || file === "") return direct;
    if (direct !== undefined) {
      this.problems.push(`${name} and ${name}_FILE are both set; set one`);
      return direct;
    }
    let content: string;
    try {
      content = readFileSync(file, "utf8");
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      this.problems.push(`${name}_FILE names ${file}, which cannot be read (${code ?? (e instanceof Error ? e.message : String(e))})`);
      return undefined;
    }
    const value = content.replace(/\r?\n$/, "").trim();
    if (value === "") this.problems.push(`${name}_FILE names ${file}, which is empty`);
    return value === "" ? undefined : value;
  }

  /** A required or defaulted string. */
  string(name: string, fallback?: string): string {
    const v = this.raw(name) ?? fallback;
    if (v === undefined) {
      this.problems.push(`${name} is required`);
      return "";
    }
    return v;
  }

  optionalString(name: string): string | undefined {
    return this.raw(name);
  }

  /** An integer within [min, max]. */
  int(name: string, fallback: number | undefined, range: { min?: number; max?: number } = {}): number {
    const v = this.raw(name);
    if (v === undefined) {
      if (fallback === undefined) this.problems.push(`${name} is required`);
      return fallback ?? 0;
    }
    if (!/^-?\d+$/.test(v)) {
      this.problems.push(`${name} must be an integer, got "${v}"`);
      return fallback ?? 0;
    }
    const n = Number(v);
    const { min = Number.MIN_SAFE_INTEGER, max = Number.MAX_SAFE_INTEGER } = range;
    if (n < min || n > max) {
      this.problems.push(`${name} must be between ${min} and ${max}, got ${n}`);
      return fallback ?? min;
    }
    return n;
  }

  /** A number (fractions allowed) within [min, max]. */
  number(name: string, fallback: number, range: { min?: number; max?: number } = {}): number {
    const v = this.raw(name);
    if (v === undefined) return fallback;
    const n = Number(v);
    const { min = -Infinity, max = Infinity } = range;
    if (!Number.isFinite(n) || n < min || n > max) {
      this.problems.push(`${name} must be a number between ${min} and ${max}, got "${v}"`);
      return fallback;
    }
    return n;
  }

  boolean(name: string, fallback: boolean): boolean {
    const v = this.raw(name)?.toLowerCase();
    if (v === undefined) return fallback;
    if (["1", "true", "yes", "on"].includes(v)) return true;
    if (["0", "false", "no", "off"].includes(v)) return false;
    this.problems.push(`${name} must be true or false, got "${v}"`);
    return fallback;
  }

  oneOf<T extends string>(name: string, allowed: readonly T[], fallback: T): T {
    const v = this.raw(name);
    if (v === undefined) return fallback;
    if (!(allowed as readonly string[]).includes(v)) {
      this.problems.push(`${name} must be one of ${allowed.join(", ")}, got "${v}"`);
      return fallback;
    }
    return v as T;
  }

  /** An http(s) base URL, e.g. for a downstream service. */
  url(name: string, fallback?: string): string {
    const v = this.string(name, fallback);
    if (v === "") return v;
    try {
      const u = new URL(v);
      if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error("protocol");
    } catch {
      this.problems.push(`${name} must be an http:// or https:// URL, got "${v}"`);
    }
    return v.replace(/\/+$/, "");
  }

  /**
   * A postgres:// connection string. With `password`, that variable (or,
   * above all, its `_FILE`) supplies the password the URL leaves out:
   * compose gives `DATABASE_URL=postgres://orders@postgres/platform` and
   * `DATABASE_PASSWORD_FILE=/run/secrets/orders_db_password`.
   */
  postgresUrl(name: string, fallback?: string, opts: { password?: string } = {}): string {
    const v = this.string(name, fallback);
    if (v === "") return v;
    let u: URL;
    try {
      u = new URL(v);
      if (u.protocol !== "postgres:" && u.protocol !== "postgresql:") throw new Error("protocol");
    } catch {
      // Never echo the value: it may hold a password.
      this.problems.push(`${name} must be a postgres:// connection string`);
      return v;
    }
    const password = opts.password === undefined ? undefined : this.raw(opts.password);
    if (password === undefined) return v;
    if (u.password !== "") {
      this.problems.push(`${name} already holds a password; leave it out of the URL or unset ${opts.password}`);
      return v;
    }
    u.password = encodeURIComponent(password);
    return u.toString();
  }

  /** Throws a ConfigError naming every problem found so far. */
  done(): void {
    if (this.problems.length > 0) throw new ConfigError(this.problems);
  }
}

/** Reads a config object with `read` and throws a ConfigError if anything was wrong. */
export function readEnv<T>(env: Env, read: (r: EnvReader) => T): T {
  const reader = new EnvReader(env);
  const value = read(reader);
  reader.done();
  rememberLoadedConfig(value);
  return value;
}
