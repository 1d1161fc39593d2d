-- Reads of the latest submitted jobs stop walking the Horde's history: the chat wait estimate (the latest fifty
-- submitted jobs) walks chat jobs by state and end; a text worker's speed (its latest twenty) walks text jobs
-- by worker, state and end, which also serves the pop's count of the worker's running jobs and replaces the
-- index by worker and state.
--
-- On a large table each CREATE INDEX takes a while and holds off writes to its table meanwhile: apply it while
-- the Horde is stopped, or build the two indexes first with CREATE INDEX CONCURRENTLY (outside a transaction).
--
-- Idempotent: applying it to a database created from the current 0001_schema.sql leaves its schema as it
-- was. One transaction: all or nothing.

BEGIN;

CREATE INDEX IF NOT EXISTS ix_chat_jobs_state_ended ON chat_jobs (state, ended_at);
CREATE INDEX IF NOT EXISTS ix_text_jobs_worker_state_ended ON text_jobs (worker_id, state, ended_at);
DROP INDEX IF EXISTS ix_text_jobs_worker_state;

COMMIT;
