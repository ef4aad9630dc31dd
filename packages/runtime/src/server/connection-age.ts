/**
 * A maximum connection age, as gRPC's MAX_CONNECTION_AGE: each HTTP/2
 * connection is told to go away (the graceful GOAWAY of listen.ts) once it
 * is this old, give or take the jitter, so that long-lived callers (other
 * services, the public load balancer) open new connections and spread over
 * the replicas there are now, not the ones there were when they connected.
 * The jitter keeps connections opened together from all going at once.
 * Calls on the connection then have the grace period to finish before it is
 * cut.
 */
export interface ConnectionAgeConfig {
  /** 0: connections live as long as their peers keep them. */
  maxAgeMs: number;
  /** Each connection's age is maxAgeMs times a random factor within 1 ± this. */
  jitter: number;
  /** How long calls may run on after the GOAWAY before the connection is cut. */
  graceMs: number;
}

/** Default: 5 minutes ± 10 %, then 30 s for the calls in flight. */
export const defaultConnectionAge: ConnectionAgeConfig = { maxAgeMs: 300_000, jitter: 0.1, graceMs: 30_000 };

/** The age this connection gets. */
export function connectionAgeMs(config: ConnectionAgeConfig, random: () => number): number {
  return Math.round(config.maxAgeMs * (1 - config.jitter + 2 * config.jitter * random()));
}

/**
 * Arms the age on one connection: `goAway` when it is reached, `cut` when
 * the grace period after it ends; nothing once the connection has closed.
 */
export function limitConnectionAge(
  connection: { once(event: "close", listener: () => void): unknown },
  config: ConnectionAgeConfig,
  actions: { goAway(): void; cut(): void },
  random: () => number = Math.random,
): void {
  if (config.maxAgeMs <= 0) return;
  let grace: NodeJS.Timeout | undefined;
  const age = setTimeout(
    () => {
      actions.goAway();
      grace = setTimeout(actions.cut, config.graceMs).unref();
    },
    connectionAgeMs(config, random),
  ).unref();
  connection.once("close", () => {
    clearTimeout(age);
    clearTimeout(grace);
  });
}
