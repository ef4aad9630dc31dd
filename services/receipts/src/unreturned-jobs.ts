import type { Logger as Pino } from "@platform/runtime";

/**
 * graphile-worker 0.18.0 loses track of one promise: a runner that stops
 * while jobs wait in its local queue (fetched and locked, no worker free)
 * hands them back to the database in a promise whose rejection nobody
 * handles (its LocalQueue's `background` throws before attaching the
 * handlers: the queue is released with nothing in the background). With
 * the database away (which is why the runner stopped) the hand-back fails,
 * and the unhandled rejection would end the process. The jobs are not
 * lost: they stay locked by the stopped runner's id, whose heartbeat has
 * stopped, so runner-heartbeat.ts releases them once it has expired.
 *
 * patches/graphile-worker+0.18.0.patch now handles that promise, so with
 * the patch in nothing reaches this; it stays for an install without the
 * patch (an error in the log at start-up, graphile-patch.ts), which would
 * otherwise end on the first failed hand-back. The rejection is recognized
 * by graphile-worker's own message for it (the version is pinned).
 */
const unreturnedJobs = /^Error occurred whilst returning jobs from local queue to database queue: /;

export function isUnreturnedLocalJobs(reason: unknown): boolean {
  return reason instanceof Error && unreturnedJobs.test(reason.message);
}

let installed = false;

/**
 * From now on this process logs that one rejection instead of ending on
 * it; any other unhandled rejection is thrown on, to end the process as
 * before (runMain's uncaught exception handler).
 */
export function tolerateUnreturnedLocalJobs(logger: Pino): void {
  if (installed) return;
  installed = true;
  process.on("unhandledRejection", (reason) => {
    if (!isUnreturnedLocalJobs(reason)) throw reason;
    logger.warn(
      { err: reason },
      "the queue could not hand its local jobs back (the database is away): they stay locked by the stopped runner until its heartbeat expires",
    );
  });
}
