-- enqueue_receipt runs in every order's transaction, and graphile-worker's
-- add_job/add_jobs under it are plpgsql: each of their statements is
-- planned again on every call (PostgreSQL's plan cache keeps choosing a
-- custom plan for them), and the planning cost more than the statements.
-- On the embedded PostgreSQL 17, pg_stat_statements measured
-- enqueue_receipt at 1.48 ms per call before and 0.53 ms with generic plans,
-- in the same run (docs/outbox.md, "What an order's receipt costs the
-- database"). plan_cache_mode set on this function applies to everything
-- it calls and is restored when it returns; the body, the signature, the
-- owner and the grants are those of migration 001, so orders' statement
-- does not change.
CREATE OR REPLACE FUNCTION receipts.enqueue_receipt(order_id uuid) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan AS $$
BEGIN
  INSERT INTO receipts.receipts (order_id) VALUES (enqueue_receipt.order_id) ON CONFLICT DO NOTHING;
  IF FOUND THEN
    PERFORM receipts.add_job(
      'send_receipt',
      json_build_object('orderId', enqueue_receipt.order_id),
      job_key := 'receipt:' || enqueue_receipt.order_id::text,
      -- graphile-worker's own retries cover a worker that crashed or lost
      -- its database mid-job; the receipt's delivery retries are the
      -- worker's (jittered, budgeted: src/retry-schedule.ts).
      max_attempts := 10
    );
  END IF;
END $$;
