import { readFile } from "node:fs/promises";
import { createLocalJWKSet, type JSONWebKeySet, type JWTVerifyGetKey } from "jose";

/** Where the signing keys come from: an identity provider's JWKS endpoint, or a file (a mounted secret). */
export type JwksSource = { url: string } | { file: string };

export interface JwksCacheOptions {
  /** Fewest milliseconds between two loads: a flood of tokens with unknown `kid`s costs the key server one request per interval. */
  minRefreshIntervalMs: number;
  /** Keys older than this are reloaded in the background; until a load succeeds, the cached keys keep working. */
  maxAgeMs: number;
  /** Longest wait for the key server. */
  fetchTimeoutMs: number;
  now?: () => number;
  /** Told when a load fails (the cached keys, if any, stay in use). */
  onLoadFailure?: (error: Error) => void;
}

/**
 * The verification keys of a JWKS, cached. A token whose `kid` is not in
 * the cache makes it reload (the provider rotated its keys), at most once
 * per `minRefreshIntervalMs`, and concurrent requests share one load. A
 * load that fails keeps the keys already cached: a key server that is down
 * stops no token signed by a key we already know. jose's
 * `createRemoteJWKSet` refreshes on an unknown `kid` too, but drops to an
 * error once its cache is older than its `cacheMaxAge` and the server does
 * not answer; here stale keys serve until a load succeeds.
 */
export class JwksCache {
  private keys: { set: JWTVerifyGetKey; kids: Set<string> } | undefined;
  private loadedAt = Number.NEGATIVE_INFINITY;
  private attemptedAt = Number.NEGATIVE_INFINITY;
  private loading: Promise<void> | undefined;
  private readonly now: () => number;

  constructor(
    private readonly source: JwksSource,
    private readonly opts: JwksCacheOptions,
  ) {
    this.now = opts.now ?? (() => performance.now());
  }

  /** Starts the first load, so the first request does not wait for it. */
  warm(): void {
    void this.refresh();
  }

  /** The key for a token's protected header, in the shape jose's `jwtVerify` takes. */
  readonly getKey: JWTVerifyGetKey = async (header, token) => {
    const kid = header.kid;
    const unknown = this.keys === undefined || (kid !== undefined && !this.keys.kids.has(kid));
    if (unknown) await this.refresh();
    else if (this.now() - this.loadedAt > this.opts.maxAgeMs) void this.refresh();
    if (!this.keys) throw new JwksUnavailableError(`no signing keys loaded from ${describe(this.source)}`);
    return this.keys.set(header, token);
  };

  /** Loads the key set unless a load started less than minRefreshIntervalMs ago; resolves when the load in progress (if any) ends. */
  refresh(): Promise<void> {
    if (this.loading) return this.loading;
    if (this.now() - this.attemptedAt < this.opts.minRefreshIntervalMs) return Promise.resolve();
    this.attemptedAt = this.now();
    this.loading = this.load()
      .then((jwks) => {
        this.keys = { set: createLocalJWKSet(jwks), kids: new Set(jwks.keys.flatMap((k) => (typeof k.kid === "string" ? [k.kid] : []))) };
        this.loadedAt = this.now();
      })
      .catch((e: unknown) => this.opts.onLoadFailure?.(e instanceof Error ? e : new Error(String(e))))
      .finally(() => {
        this.loading = undefined;
      });
    return this.loading;
  }

  private async load(): Promise<JSONWebKeySet> {
    const text = "file" in this.source ? await readFile(this.source.file, "utf8") : await fetchText(this.source.url, this.opts.fetchTimeoutMs);
    const jwks = JSON.parse(text) as unknown;
    if (typeof jwks !== "object" || jwks === null || !Array.isArray((jwks as { keys?: unknown }).keys)) {
      throw new Error(`${describe(this.source)} is not a JSON Web Key Set (no "keys" array)`);
    }
    return jwks as JSONWebKeySet;
  }
}

/** No key has been loaded yet (the key server has not answered since start). */
export class JwksUnavailableError extends Error {
  override name = "JwksUnavailableError";
}

async function fetchText(url: string, timeoutMs: number): Promise<string> {
  const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs), headers: { accept: "application/json" } });
  if (!res.ok) throw new Error(`${url} answered HTTP ${res.status}`);
  return res.text();
}

function describe(source: JwksSource): string {
  return "file" in source ? source.file : source.url;
}
