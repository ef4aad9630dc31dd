-- A small demo catalogue so that a fresh `npm start` can place orders.
-- Not a migration: pricing loads it at start only when DEMO_CATALOGUE=true,
-- which `npm start` and the tests set and compose and Kubernetes do not.
-- Idempotent: loading it again changes nothing.
INSERT INTO pricing.products (sku, name, currency_code, unit_price_minor) VALUES
  ('COFFEE-BEANS-1KG', 'Coffee beans, 1 kg', 'USD', 2450),
  ('MUG-CERAMIC',      'Ceramic mug',        'USD', 1200),
  ('GRINDER-BURR',     'Burr grinder',       'USD', 8999),
  ('FILTER-PAPER-100', 'Filter papers (100)', 'USD', 499),
  ('KETTLE-GOOSENECK', 'Gooseneck kettle',   'USD', 5400)
ON CONFLICT (sku) DO NOTHING;
