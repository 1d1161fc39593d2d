-- sql/0014_conversation_affinity.sql for SQLite. A new NOT NULL column gets its value for existing rows from a
-- default, which SQLite keeps.

ALTER TABLE chat_requests ADD COLUMN conversation_key VARCHAR(32);
ALTER TABLE chat_requests ADD COLUMN reserved_worker_id VARCHAR(36);
ALTER TABLE chat_requests ADD COLUMN reserved_until DATETIME;
ALTER TABLE text_jobs ADD COLUMN cached_tokens INTEGER NOT NULL DEFAULT 0;
CREATE INDEX IF NOT EXISTS ix_chat_requests_conversation ON chat_requests (conversation_key, created_at);
CREATE INDEX IF NOT EXISTS ix_chat_requests_reserved
    ON chat_requests (state, reserved_worker_id, priority_class, priority DESC, created_at, id)
    WHERE state = 'waiting' AND reserved_worker_id IS NOT NULL;
