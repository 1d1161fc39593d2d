-- Batch lines apart from their user's concurrency on SQLite: the same columns and indexes as
-- sql/0044_batch_lines_apart.sql. Applied once, by the tracked migrations.

ALTER TABLE chat_requests ADD COLUMN batch_line BOOLEAN NOT NULL DEFAULT 0;
ALTER TABLE text_requests ADD COLUMN batch_line BOOLEAN NOT NULL DEFAULT 0;
CREATE INDEX IF NOT EXISTS ix_chat_requests_counted_in_flight ON chat_requests (user_id)
    WHERE state IN ('waiting', 'processing') AND NOT batch_line;
CREATE INDEX IF NOT EXISTS ix_text_requests_counted_in_flight ON text_requests (user_id)
    WHERE state IN ('waiting', 'processing') AND NOT batch_line;
DROP INDEX IF EXISTS ix_chat_requests_in_flight;
DROP INDEX IF EXISTS ix_text_requests_in_flight;
