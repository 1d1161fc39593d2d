-- SQLite's step of sql/0017_request_concurrency_and_multiplier.sql.

ALTER TABLE chat_requests ADD COLUMN usage_multiplier FLOAT NOT NULL DEFAULT 1.0;
ALTER TABLE text_requests ADD COLUMN usage_multiplier FLOAT NOT NULL DEFAULT 1.0;
CREATE INDEX IF NOT EXISTS ix_chat_requests_in_flight ON chat_requests (user_id) WHERE state IN ('waiting', 'processing');
CREATE INDEX IF NOT EXISTS ix_text_requests_in_flight ON text_requests (user_id) WHERE state IN ('waiting', 'processing');
