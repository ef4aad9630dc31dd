-- The notes owned by the example-notes service, in its own schema (which
-- its own role owns). Replace with your tables; change them with new files
-- (002_...), never by editing an applied one (start refuses a changed file).
CREATE TABLE example_notes.notes (
  id   text PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 64),
  text text NOT NULL CHECK (length(text) BETWEEN 1 AND 1000)
);
