-- sql/0007_jobs_by_end.sql for SQLite (the same statements). On a large table, run the upgrade while the Horde is
-- stopped: SQLite builds an index holding the write lock.

CREATE INDEX IF NOT EXISTS ix_chat_jobs_state_ended ON chat_jobs (state, ended_at);
CREATE INDEX IF NOT EXISTS ix_text_jobs_worker_state_ended ON text_jobs (worker_id, state, ended_at);
DROP INDEX IF EXISTS ix_text_jobs_worker_state;
