-- Workers: whether a moderator paused one (it takes no jobs), the address of its latest check-in (which a
-- moderator may block: /api/v2/operations/block_worker_ipaddr/{id}), and what its name looks like (`name_key`:
-- NFKC, confusable dashes and spaces, case folded; horde/workers/names.py), unique among live workers, so that no
-- worker takes a look-alike of another's name.
--
-- The keys are not computed here: SQL has no case folding of Python's, and SQLite no normalization at all. This
-- step adds the column (empty) and its unique index, which empty keys never break; the server fills the keys at its
-- start (and `python -m horde workers name-keys` at any time), leaving without one, and reporting, every worker
-- whose name looks like an older worker's: rename those (PUT /api/v2/workers/{id}) and run the command again.
--
-- Idempotent: applying it to a database created from the current 0001_schema.sql leaves its schema as it was.
-- One transaction: all or nothing.

BEGIN;

ALTER TABLE workers ADD COLUMN IF NOT EXISTS paused BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE workers ADD COLUMN IF NOT EXISTS name_key VARCHAR(400);
ALTER TABLE workers ADD COLUMN IF NOT EXISTS ip_address VARCHAR(64);
CREATE UNIQUE INDEX IF NOT EXISTS ix_workers_name_key ON workers (name_key);

COMMIT;
