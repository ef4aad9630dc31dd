-- The items owned by the receipts service (schema receipts, owned by its
-- own role). Replace with your tables; add changes as new files (002_...),
-- never by editing an applied one.
CREATE TABLE receipts.items (
  id   text PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 64),
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200)
);

-- One example row, so that a fresh start answers GetItem("example").
INSERT INTO receipts.items (id, name) VALUES ('example', 'An example item')
ON CONFLICT (id) DO NOTHING;
