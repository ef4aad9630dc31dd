-- Recovery of jobs whose runner died (docs/outbox.md, "A runner that dies").
-- graphile-worker locks a job with its worker pool's id and releases jobs
-- still locked after 4 hours only: a receipts process killed with SIGKILL,
-- or a database restart that ends the runner mid-job, would delay those
-- receipts by 4 hours. Each running pool keeps a row here fresh (a
-- heartbeat); a live runner releases the jobs of pools whose row went stale
-- or never existed.

CREATE TABLE receipts.queue_runners (
  pool_id      text PRIMARY KEY,
  started_at   timestamptz NOT NULL DEFAULT now(),
  heartbeat_at timestamptz NOT NULL DEFAULT now()
);

-- Releases the jobs locked by runners that are not alive: whose heartbeat
-- is older than `expiry`, or that have no row at all (a process that died
-- before its first heartbeat). A job locked less than `expiry` ago is never
-- released, so a pool that just started is safe before its first heartbeat
-- commits. Safe to run from several replicas at once: force_unlock_workers
-- re-checks `locked_by` on each row it updates, so a job that a live runner
-- locked in the meantime is not touched. Releasing a live runner's job by
-- mistake (its heartbeat stalled longer than `expiry`) only runs the job
-- twice, which the receipt's conditional updates and the mailer's
-- idempotency key make harmless (docs/outbox.md, "Each receipt exactly once").
-- Returns the pool ids whose jobs were released.
-- plpgsql binds the queue's tables when it first runs, after the queue is installed.
CREATE FUNCTION receipts.release_dead_runners(expiry interval) RETURNS text[]
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  dead text[];
BEGIN
  DELETE FROM receipts.queue_runners WHERE heartbeat_at < now() - expiry;
  SELECT array_agg(DISTINCT j.locked_by) INTO dead
    FROM receipts._private_jobs j
   WHERE j.locked_by IS NOT NULL
     AND j.locked_at < now() - expiry
     AND NOT EXISTS (SELECT 1 FROM receipts.queue_runners r WHERE r.pool_id = j.locked_by);
  IF dead IS NOT NULL THEN
    PERFORM receipts.force_unlock_workers(dead);
  END IF;
  RETURN coalesce(dead, '{}');
END $$;
