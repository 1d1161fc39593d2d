-- The flex tier (docs/reference/batches.md): a chat or text request keeps the service tier it was admitted in,
-- "default" (interactive) or "flex" (service_tier "flex", a batch line), which its submit prices it by. Rows
-- written before it are interactive ones: the column's default.
--
-- ADD COLUMN with a constant default rewrites no row on PostgreSQL 11 and later: quick on a large table.
--
-- Idempotent: applying it to a database created from the current 0001_schema.sql leaves its schema as it
-- was. One transaction: all or nothing.

BEGIN;

ALTER TABLE chat_requests ADD COLUMN IF NOT EXISTS service_tier VARCHAR(8) NOT NULL DEFAULT 'default';
ALTER TABLE text_requests ADD COLUMN IF NOT EXISTS service_tier VARCHAR(8) NOT NULL DEFAULT 'default';

COMMIT;
