-- The catalogue and its prices, owned by the pricing service.
CREATE TABLE pricing.products (
  sku              text PRIMARY KEY CHECK (sku ~ '^[A-Z0-9][A-Z0-9-]{0,63}$'),
  name             text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  currency_code    char(3) NOT NULL CHECK (currency_code ~ '^[A-Z]{3}$'),
  unit_price_minor bigint NOT NULL CHECK (unit_price_minor >= 0)
);
