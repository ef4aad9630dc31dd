import pg from "pg";

/** One statement seen running on the server, timed by the server's own clock (milliseconds since the epoch). */
export interface WatchedStatement {
  pid: number;
  query: string;
  /** pg_stat_activity.query_start. */
  startedAt: number;
  /** The server's clock at the last poll that showed it running: it ended after this. */
  lastSeenAt: number;
  /** lastSeenAt - startedAt: at least how long it ran. */
  ranAtLeastMs: number;
  /** The server's clock at the first poll that no longer showed it: an upper bound of when it ended. Undefined while it runs. */
  goneBy: number | undefined;
  /** goneBy - startedAt: at most how long it ran. */
  ranAtMostMs: number | undefined;
}

/**
 * Watches pg_stat_activity for the active statements of one application
 * (optionally only those whose text contains `queryContains`) and times
 * each from the server's clock: when it started, and by when it was gone.
 * Tests use it to claim "the statement was cancelled on the server within
 * N ms of its deadline" without trusting a loaded client's timers.
 *
 * It ended between `lastSeenAt` and `goneBy`. The gap is the watcher's own
 * poll interval, which grows on a loaded machine (the polls are this
 * process's timers and queries): a bound on when a statement stopped that
 * must not depend on the machine's speed reads `ranAtLeastMs`. A statement
 * that was never stopped still fails it, as the polls see it running on.
 *
 * One statement is one backend, transaction and text: not its
 * `query_start`, which PostgreSQL sets again at each message of the
 * extended protocol (Parse, Bind, Execute), so a poll between two of them
 * saw one parameterized statement with two start times, tens of
 * microseconds apart, and counted it twice (11 of 400 transactions polled
 * without pause; `test/e2e/deadlines.test.ts` failed once in a full run
 * with "the watcher saw 2 slow statements"). Its start is the earliest one
 * seen. Two statements of the same text in one transaction count as one.
 */
export function watchStatements(
  connectionString: string,
  where: { applicationName: string; queryContains?: string },
): {
  /** Resolves once the first poll is done: a statement started after this is seen (a short one, too, on a loaded machine where connecting the watcher is slow). */
  polling: Promise<void>;
  /** Everything seen so far. */
  seen(): WatchedStatement[];
  /** Stops polling (after one last poll) and returns everything seen. */
  stop(): Promise<WatchedStatement[]>;
} {
  const byKey = new Map<string, WatchedStatement>();
  let polling = true;
  let firstPollDone: () => void = () => {};
  const firstPoll = new Promise<void>((resolve) => (firstPollDone = resolve));
  const loop = (async () => {
    const client = new pg.Client({ connectionString });
    client.on("error", () => {});
    await client.connect();
    try {
      for (let last = false; !last; ) {
        last = !polling;
        const { rows } = await client.query<{ pid: number; query: string; xact: string | null; started: string; now: string }>(
          `SELECT pid, query, xact_start::text AS xact, extract(epoch FROM query_start) * 1000 AS started, extract(epoch FROM clock_timestamp()) * 1000 AS now
             FROM pg_stat_activity
            WHERE application_name = $1 AND state = 'active' AND pid <> pg_backend_pid() AND query LIKE '%' || $2 || '%'`,
          [where.applicationName, where.queryContains ?? ""],
        );
        const now = Number((await client.query<{ now: string }>("SELECT extract(epoch FROM clock_timestamp()) * 1000 AS now")).rows[0]!.now);
        const running = new Set<string>();
        for (const r of rows) {
          // Outside a transaction block a statement is its own transaction: xact_start is its start.
          const key = `${r.pid}@${r.xact ?? r.started}@${r.query}`;
          running.add(key);
          const seenAt = Number(r.now);
          const known = byKey.get(key);
          const startedAt = Math.min(Number(r.started), known?.startedAt ?? Number.POSITIVE_INFINITY);
          if (known) Object.assign(known, { startedAt, lastSeenAt: seenAt, ranAtLeastMs: seenAt - startedAt });
          else
            byKey.set(key, {
              pid: r.pid,
              query: r.query,
              startedAt,
              lastSeenAt: seenAt,
              ranAtLeastMs: seenAt - startedAt,
              goneBy: undefined,
              ranAtMostMs: undefined,
            });
        }
        for (const [key, s] of byKey) {
          if (s.goneBy === undefined && !running.has(key)) {
            s.goneBy = now;
            s.ranAtMostMs = now - s.startedAt;
          }
        }
        firstPollDone();
        if (!last) await new Promise((r) => setTimeout(r, 15));
      }
    } finally {
      await client.end().catch(() => {});
    }
  })();
  return {
    polling: Promise.race([firstPoll, loop]),
    seen: () => [...byKey.values()],
    async stop() {
      polling = false;
      await loop;
      return [...byKey.values()];
    },
  };
}
