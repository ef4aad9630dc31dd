-- Watchers of an order (orders' WatchOrder, docs/streams.md) learn that its
-- receipt changed state from a notification on the channel
-- 'receipt_changes', its payload the order's id. Sent by PostgreSQL at the
-- commit of the change and not at all if it rolls back, so a watcher that
-- reads the receipt after a notification sees the committed state. A state
-- that does not change (a claim, a retry scheduled) notifies nobody.
CREATE FUNCTION receipts.notify_receipt_change() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  PERFORM pg_notify('receipt_changes', NEW.order_id::text);
  RETURN NULL;
END $$;

CREATE TRIGGER receipt_state_changed
  AFTER UPDATE OF state ON receipts.receipts
  FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state)
  EXECUTE FUNCTION receipts.notify_receipt_change();
