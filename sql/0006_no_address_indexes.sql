-- The anonymous user's rate budget is summed from rate_counts (0005): nothing reads requests by client address
-- any more, so their two indexes only cost every admission a write. Dropped.
--
-- Idempotent (IF EXISTS): applying it to a database created from the current 0001_schema.sql leaves its schema
-- as it was. One transaction: all or nothing.

BEGIN;

DROP INDEX IF EXISTS ix_chat_requests_address_created;
DROP INDEX IF EXISTS ix_text_requests_address_created;

COMMIT;
