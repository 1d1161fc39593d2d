-- Background responses and resumable streams (docs/decisions/0031-background-responses-from-durable-events.md): a
-- chat request says whether its progress posts are kept (progress_log: 0 no, 1 kept, 2 kept and some text kept); a
-- background request's record keeps its dialect's recipe for the retention; the kept posts are the deltas they
-- added, in order.
--
-- Adding a column with a constant default does not rewrite chat_requests (PostgreSQL 11 and later).
--
-- Idempotent: applying it to a database created from the current 0001_schema.sql leaves its schema as it
-- was. One transaction: all or nothing.

BEGIN;

ALTER TABLE chat_requests ADD COLUMN IF NOT EXISTS progress_log INTEGER DEFAULT 0 NOT NULL;

CREATE TABLE IF NOT EXISTS background_requests (
	id VARCHAR(64) NOT NULL,
	user_id INTEGER NOT NULL,
	request_id VARCHAR(36) NOT NULL,
	recipe JSON NOT NULL,
	created_at TIMESTAMP WITHOUT TIME ZONE NOT NULL,
	expires_at TIMESTAMP WITHOUT TIME ZONE NOT NULL,
	PRIMARY KEY (id),
	FOREIGN KEY(user_id) REFERENCES users (id),
	UNIQUE (request_id)
);
CREATE INDEX IF NOT EXISTS ix_background_requests_expires_at ON background_requests (expires_at);
CREATE INDEX IF NOT EXISTS ix_background_requests_user_id ON background_requests (user_id);

CREATE TABLE IF NOT EXISTS progress_entries (
	request_id VARCHAR(36) NOT NULL,
	seq INTEGER NOT NULL,
	job_id VARCHAR(36) NOT NULL,
	content TEXT NOT NULL,
	reasoning TEXT NOT NULL,
	PRIMARY KEY (request_id, seq)
);

COMMIT;
