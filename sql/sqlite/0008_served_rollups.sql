-- sql/0008_served_rollups.sql for SQLite: its indexes (a start creates the served_* tables from the models).

CREATE INDEX IF NOT EXISTS ix_chat_requests_done_finished ON chat_requests (state, finished_at) WHERE state = 'done';
CREATE INDEX IF NOT EXISTS ix_text_jobs_submitted_ended ON text_jobs (state, ended_at) WHERE state = 'submitted';
DROP INDEX IF EXISTS ix_text_jobs_ended_at;
