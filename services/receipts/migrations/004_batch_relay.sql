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
