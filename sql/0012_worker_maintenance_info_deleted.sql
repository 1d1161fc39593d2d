-- A worker's owner manages it through PUT and DELETE /api/v2/workers/{id} (horde/registry/manage.py): maintenance
-- (a worker in maintenance takes no jobs) with its message, a note shown with the worker (info), and the time it
-- was deleted (its row stays for the jobs that name it).
--
-- Idempotent: applying it to a database created from the current 0001_schema.sql leaves its schema as it was.
-- The NOT NULL column gets its value for existing rows from a temporary default, dropped at once (the
-- application always writes it). One transaction: all or nothing.

BEGIN;

ALTER TABLE workers ADD COLUMN IF NOT EXISTS maintenance BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE workers ALTER COLUMN maintenance DROP DEFAULT;
ALTER TABLE workers ADD COLUMN IF NOT EXISTS maintenance_msg VARCHAR(300);
ALTER TABLE workers ADD COLUMN IF NOT EXISTS info VARCHAR(1000);
ALTER TABLE workers ADD COLUMN IF NOT EXISTS deleted_at TIMESTAMP WITHOUT TIME ZONE;

COMMIT;
