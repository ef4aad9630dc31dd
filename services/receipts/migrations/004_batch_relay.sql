-- The receipts table is the outbox itself (docs/outbox.md). The order's
-- transaction inserts one row; a relay claims pending rows in batches,
-- sends them, and writes their outcomes in one statement per batch.
--
-- A receipt is due at `due_at` (now for a new one; later for a retry) and
-- claimable while it is pending, due and not leased. A claim counts the
-- attempt and leases the row until `leased_until`: a relay that dies leaves
-- its receipts to be claimed again when the lease ends. The lease is not
-- indexed, so a claim is an update PostgreSQL can make in place (HOT); the
-- fill factor leaves each page room for it.

ALTER TABLE receipts.receipts
  ADD COLUMN due_at timestamptz NOT NULL DEFAULT now(),
  ADD COLUMN leased_until timestamptz,
  SET (fillfactor = 80);

DROP INDEX receipts.receipts_unsent;
CREATE INDEX receipts_due ON receipts.receipts (due_at) WHERE state = 'pending';

-- One insert in the caller's transaction, nothing else: no queue, no
-- NOTIFY (a notifying commit takes a lock that serializes every notifying
-- commit of the cluster). The relay finds new rows by claiming every poll
-- interval. A second call for the same order fails on the primary key: one
-- order, one receipt.
CREATE OR REPLACE FUNCTION receipts.enqueue_receipt(order_id uuid) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  INSERT INTO receipts.receipts (order_id) VALUES (enqueue_receipt.order_id);
END $$;

-- The relay's two statements (src/receipt-statements.ts has what each does).
-- As functions, their plans are made once per connection: planned afresh
-- at each call, the claim's plan cost more than the claim (an empty claim
-- took 265 us of the server's CPU planned each time, 95 us prepared).
CREATE FUNCTION receipts.claim_receipts(batch_size int, lease_ms int)
RETURNS TABLE (order_id uuid, attempts int)
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_generic_plan AS $$
BEGIN
  RETURN QUERY
  UPDATE receipts.receipts r
     SET attempts = r.attempts + 1, leased_until = now() + make_interval(secs => lease_ms::float8 / 1000), updated_at = now()
    FROM (SELECT d.order_id FROM receipts.receipts d
           WHERE d.state = 'pending' AND d.due_at <= now() AND (d.leased_until IS NULL OR d.leased_until <= now())
           ORDER BY d.due_at LIMIT batch_size FOR UPDATE SKIP LOCKED) due
   WHERE r.order_id = due.order_id
  RETURNING r.order_id, r.attempts;
END $$;

CREATE FUNCTION receipts.complete_receipts(order_ids uuid[], kinds text[], claimed_attempts int[], message_ids text[], errors text[], delays_ms int[])
RETURNS TABLE (order_id uuid)
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_generic_plan AS $$
BEGIN
  RETURN QUERY
  UPDATE receipts.receipts r
     SET state = CASE v.kind WHEN 'sent' THEN 'sent' WHEN 'failed' THEN 'failed' ELSE 'pending' END,
         message_id = CASE WHEN v.kind = 'sent' THEN v.message_id ELSE r.message_id END,
         sent_at = CASE WHEN v.kind = 'sent' THEN now() ELSE r.sent_at END,
         last_error = CASE v.kind WHEN 'sent' THEN NULL WHEN 'released' THEN r.last_error ELSE v.error END,
         attempts = CASE WHEN v.kind = 'released' THEN r.attempts - 1 ELSE r.attempts END,
         due_at = CASE WHEN v.kind = 'retry' THEN now() + make_interval(secs => v.delay_ms::float8 / 1000) ELSE r.due_at END,
         leased_until = NULL,
         updated_at = now()
    FROM unnest(order_ids, kinds, claimed_attempts, message_ids, errors, delays_ms) AS v(order_id, kind, attempts, message_id, error, delay_ms)
   WHERE r.order_id = v.order_id AND r.state = 'pending' AND (v.kind = 'sent' OR r.attempts = v.attempts)
  RETURNING r.order_id;
END $$;

REVOKE ALL ON FUNCTION receipts.claim_receipts(int, int), receipts.complete_receipts(uuid[], text[], int[], text[], text[], int[]) FROM PUBLIC;

-- The job queue this schema held before (graphile-worker's tables,
-- functions and bookkeeping, and the runners' heartbeats), where an earlier
-- version installed it. Pending receipts need nothing from it: the relay
-- finds them in receipts.receipts.
DO $$
DECLARE
  f regprocedure;
BEGIN
  FOR f IN
    SELECT p.oid::regprocedure FROM pg_proc p
     WHERE p.pronamespace = 'receipts'::regnamespace
       AND p.proname IN ('add_job', 'add_jobs', 'complete_jobs', 'force_unlock_workers', 'permanently_fail_jobs',
                         'remove_job', 'reschedule_jobs', 'release_dead_runners')
  LOOP
    EXECUTE format('DROP FUNCTION %s', f);
  END LOOP;
END $$;
DROP VIEW IF EXISTS receipts.jobs;
DROP TABLE IF EXISTS receipts._private_jobs, receipts._private_job_queues, receipts._private_tasks,
  receipts._private_known_crontabs, receipts.queue_runners, receipts.migrations;
DROP TYPE IF EXISTS receipts.job_spec;
