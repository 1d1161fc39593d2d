-- A pop counts its worker's running jobs (chat and text): indexed by worker and state, so the count reads
-- the worker's running jobs only, not every job the worker ever ran. Replaces the index by worker alone.
--
-- Idempotent: applying it to a database created from the current 0001_schema.sql leaves its schema as it
-- was. One transaction: all or nothing.

BEGIN;

CREATE INDEX IF NOT EXISTS ix_chat_jobs_worker_state ON chat_jobs (worker_id, state);
DROP INDEX IF EXISTS ix_chat_jobs_worker_id;
CREATE INDEX IF NOT EXISTS ix_text_jobs_worker_state ON text_jobs (worker_id, state);
DROP INDEX IF EXISTS ix_text_jobs_worker_id;

COMMIT;
