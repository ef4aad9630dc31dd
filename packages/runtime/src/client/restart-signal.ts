/**
 * What this process waits out: a resource of its own whose server refuses
 * connections while it restarts (its database), or a dependency that said
 * it waits out such a restart further down. A caller whose calls to this
 * service are overdue asks (its bulkhead's stall classifier, through this
 * service's health check), and waits with them instead of shedding: a
 * restart ends with every waiting call served at once, a stall does not
 * (resilience's bulkhead.ts). The answer travels up the chain hop by hop.
 */

/** The response header of a health check that names what the service waits out. */
export const waitingForRestartHeader = "x-waiting-for-restart";

/** How long a dependency's "waiting out a restart" is believed without asking again. */
const heldForMs = 500;

const dependencies = new Map<string, number>();

/** A dependency said it waits out a restart (`what`, e.g. "pricing-db"). */
export function noteDependencyRestarting(dependency: string, what: string): void {
  dependencies.set(`${dependency}: ${what}`, performance.now() + heldForMs);
}

/** What a dependency of this process waits out now, if any. */
export function dependencyRestarting(): string | undefined {
  const now = performance.now();
  for (const [what, until] of dependencies) {
    if (until > now) return what;
    dependencies.delete(what);
  }
  return undefined;
}
