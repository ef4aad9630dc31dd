-- The receipts service's schema (owned by its own role). It holds its own
-- table, the job queue (graphile-worker, installed into this same schema by
-- the service at start-up: src/queue.ts) and the two functions that are the
-- whole of its interface to the orders service.

-- graphile-worker's bookkeeping table, created here as its documented schema
-- install does, minus the CREATE SCHEMA that would need CREATE on the
-- database: this role owns its schema and nothing more (docs/outbox.md).
CREATE TABLE receipts.migrations (
  id       int PRIMARY KEY,
  ts       timestamptz NOT NULL DEFAULT now(),
  breaking boolean NOT NULL DEFAULT false
);

-- One row per order, written in the order's own transaction (by
-- enqueue_receipt below). The primary key is what makes "one receipt per
-- order" true: a second enqueue finds the row, and the worker moves it from
-- pending to sent (or failed) once, with a conditional UPDATE.
CREATE TABLE receipts.receipts (
  order_id   uuid PRIMARY KEY,
  state      text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sent', 'failed')),
  attempts   int NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  last_error text,
  message_id text,
  queued_at  timestamptz NOT NULL DEFAULT now(),
  sent_at    timestamptz,
  updated_at timestamptz NOT NULL DEFAULT now(),
  CHECK ((state = 'sent') = (message_id IS NOT NULL AND sent_at IS NOT NULL))
);

CREATE INDEX receipts_unsent ON receipts.receipts (state) WHERE state <> 'sent';

-- Called by the orders service inside the transaction that stores the order
-- (a transactional outbox): the receipt row and its job commit or roll back
-- with the order. SECURITY DEFINER with a fixed search_path, so that the
-- caller needs EXECUTE on this function only, never on the queue's tables.
-- plpgsql binds add_job when it first runs, after the queue is installed.
CREATE FUNCTION receipts.enqueue_receipt(order_id uuid) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
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

-- What GetOrder shows: the receipt's state and attempts, or no row for an
-- order from before receipts existed.
CREATE FUNCTION receipts.receipt_status(order_id uuid) RETURNS TABLE (state text, attempts int)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
  SELECT r.state, r.attempts FROM receipts.receipts r WHERE r.order_id = receipt_status.order_id
$$;

REVOKE ALL ON FUNCTION receipts.enqueue_receipt(uuid), receipts.receipt_status(uuid) FROM PUBLIC;
