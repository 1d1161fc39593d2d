-- Background responses and resumable streams, on SQLite (docs/decisions/0031-background-responses-from-durable-events.md):
-- a chat request says whether its progress posts are kept. The new tables (background_requests, progress_entries)
-- are created by the server on its start.
--
-- SQLite has no ADD COLUMN IF NOT EXISTS: apply it once, to a database made before this change (it fails with
-- "duplicate column name: progress_log" on one that has the column already, and changes nothing then).

ALTER TABLE chat_requests ADD COLUMN progress_log INTEGER DEFAULT 0 NOT NULL;
