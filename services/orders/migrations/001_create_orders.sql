-- Orders, their lines and idempotency records, owned by the orders service.
CREATE TABLE orders.orders (
  id            uuid PRIMARY KEY,
  customer_id   text NOT NULL,
  status        text NOT NULL DEFAULT 'PLACED',
  currency_code char(3) NOT NULL,
  total_minor   bigint NOT NULL CHECK (total_minor >= 0),
  created_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE orders.order_items (
  order_id         uuid NOT NULL REFERENCES orders.orders (id) ON DELETE CASCADE,
  line_no          int NOT NULL,
  sku              text NOT NULL,
  name             text NOT NULL,
  quantity         int NOT NULL CHECK (quantity > 0),
  currency_code    char(3) NOT NULL,
  unit_price_minor bigint NOT NULL,
  line_total_minor bigint NOT NULL,
  PRIMARY KEY (order_id, line_no)
);

-- One row per idempotency key, written in the same transaction as the order
-- it produced, with the response that was sent. The primary key is what makes
-- "the same key never produces two orders" true under concurrency: a second
-- writer blocks on the first one's uncommitted row, then sees it.
CREATE TABLE orders.idempotency_records (
  key          text PRIMARY KEY,
  request_hash text NOT NULL,
  order_id     uuid NOT NULL REFERENCES orders.orders (id),
  response     bytea NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz NOT NULL
);

CREATE INDEX idempotency_records_expires_at ON orders.idempotency_records (expires_at);
