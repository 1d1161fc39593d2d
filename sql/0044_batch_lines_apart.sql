-- A batch's lines are bounded by the batch's lines in flight (HORDE_BATCH_MAX_IN_FLIGHT), not by their user's
-- concurrency: a request row tells whether it is a batch line, and the partial indexes that admission counts a
-- user's requests in flight by leave batch lines out (docs/reference/moderation.md, concurrency). Lines already in
-- flight when this runs count as interactive requests until they end: the column's default.
--
-- ADD COLUMN with a constant default rewrites no row on PostgreSQL 11 and later. CREATE INDEX holds off the
-- table's writes while it builds: on a busy Horde, build the two indexes first with CREATE INDEX CONCURRENTLY
-- (outside a transaction), then apply this file, which finds them. The counting functions (horde_chat_in_flight,
-- horde_text_in_flight) are replaced by every start.
--
-- Idempotent: applying it to a database created from the current 0001_schema.sql leaves its schema as it was.
-- One transaction: all or nothing.

BEGIN;

ALTER TABLE chat_requests ADD COLUMN IF NOT EXISTS batch_line BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE text_requests ADD COLUMN IF NOT EXISTS batch_line BOOLEAN NOT NULL DEFAULT false;
CREATE INDEX IF NOT EXISTS ix_chat_requests_counted_in_flight ON chat_requests (user_id)
    WHERE state IN ('waiting', 'processing') AND NOT batch_line;
CREATE INDEX IF NOT EXISTS ix_text_requests_counted_in_flight ON text_requests (user_id)
    WHERE state IN ('waiting', 'processing') AND NOT batch_line;
DROP INDEX IF EXISTS ix_chat_requests_in_flight;
DROP INDEX IF EXISTS ix_text_requests_in_flight;

COMMIT;
