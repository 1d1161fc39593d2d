-- Conversation affinity (docs/decisions/0029-conversation-affinity.md): a chat request keeps its conversation's
-- key (hashed with its user's id) and, when its conversation's last worker was eligible for it at admission, that
-- worker's reservation until a short time after its admission. The conversation's latest requests are read by
-- key and age; a worker's claim probes the waiting requests reserved for it (a partial index: only those). A text
-- generation keeps the prompt tokens its worker read from cache.
--
-- On a large table each CREATE INDEX takes a while and holds off writes to its table meanwhile: apply it while
-- the Horde is stopped, or build the two indexes first with CREATE INDEX CONCURRENTLY (outside a transaction).
--
-- Idempotent: applying it to a database created from the current 0001_schema.sql leaves its schema as it
-- was. One transaction: all or nothing.

BEGIN;

ALTER TABLE chat_requests ADD COLUMN IF NOT EXISTS conversation_key VARCHAR(32);
ALTER TABLE chat_requests ADD COLUMN IF NOT EXISTS reserved_worker_id VARCHAR(36);
ALTER TABLE chat_requests ADD COLUMN IF NOT EXISTS reserved_until TIMESTAMP WITHOUT TIME ZONE;
ALTER TABLE text_jobs ADD COLUMN IF NOT EXISTS cached_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE text_jobs ALTER COLUMN cached_tokens DROP DEFAULT;
CREATE INDEX IF NOT EXISTS ix_chat_requests_conversation ON chat_requests (conversation_key, created_at);
CREATE INDEX IF NOT EXISTS ix_chat_requests_reserved
    ON chat_requests (state, reserved_worker_id, priority_class, priority DESC, created_at, id)
    WHERE state = 'waiting' AND reserved_worker_id IS NOT NULL;

COMMIT;
