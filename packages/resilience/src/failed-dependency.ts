import { ConnectError } from "@connectrpc/connect";

/**
 * The wire mark of whose failure an error reports: the value names the
 * service that failed. @platform/runtime sets it in two places: a hop's
 * isolation refusing a call to a dependency (its breaker open, its bulkhead
 * or adaptive limit full) names that dependency, and a hop mapping a
 * dependency's failure to its own answer names that dependency too, unless
 * a mark is already there (set further down: it names where the failure
 * began, and is kept). Every hop passes it up with the error, as it passes
 * the pushback hint; a caller reads it too (`curl -i` shows which service
 * failed).
 *
 * Why it travels: a breaker judges its own dependency, not that
 * dependency's dependencies, which have breakers of their own one hop
 * further down. A service that answers "my dependency failed" is up and
 * answered; counted against it, the same failure opened a breaker at every
 * hop of the path (stacked breakers). After the fault each hop then ran its
 * own half-open trial only when its own reset timeout came, the outer
 * trials met inner breakers still open and reopened, and orders came back
 * 9 s after a 5 s database outage rather than within one reset timeout
 * (docs/architecture.md, "Stacked breakers"). So a breaker counts a marked
 * failure only when the mark names its own dependency (circuit-breaker.ts,
 * isDependencyFailure).
 */
export const failedDependencyHeader = "x-failed-dependency";

/** The service whose failure `err` reports, if it is marked (see failedDependencyHeader). */
export function failedDependencyOf(err: unknown): string | undefined {
  if (!(err instanceof ConnectError)) return undefined;
  return err.metadata.get(failedDependencyHeader) ?? undefined;
}
