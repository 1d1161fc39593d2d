-- sql/0003_jobs_by_worker_and_state.sql for SQLite (the same statements).

CREATE INDEX IF NOT EXISTS ix_chat_jobs_worker_state ON chat_jobs (worker_id, state);
DROP INDEX IF EXISTS ix_chat_jobs_worker_id;
CREATE INDEX IF NOT EXISTS ix_text_jobs_worker_state ON text_jobs (worker_id, state);
DROP INDEX IF EXISTS ix_text_jobs_worker_id;
