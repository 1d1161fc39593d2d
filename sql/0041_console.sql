-- The account console (docs/reference/console.md): the ledger read by user and time (its pages, newest first, and
-- its sums per day), each user's usage by day as the stats rollup passes served rows, and the queue's samples by
-- minute. The index by user and time replaces the one by user alone, which it covers (decision 0040).
--
-- Building the index locks the ledger against writes while it runs (minutes on a ledger of many millions of rows):
-- run it at a quiet time, or build ix_kudos_ledger_user_created by hand first with CREATE INDEX CONCURRENTLY.
-- Idempotent: applying it to a database created from the current 0001_schema.sql leaves its schema as it was.
-- One transaction: all or nothing.

BEGIN;

CREATE INDEX IF NOT EXISTS ix_kudos_ledger_user_created ON kudos_ledger (user_id, created_at, id);
DROP INDEX IF EXISTS ix_kudos_ledger_user_id;

CREATE TABLE IF NOT EXISTS user_usage_days (
	user_id INTEGER NOT NULL,
	day DATE NOT NULL,
	requests BIGINT NOT NULL,
	tokens BIGINT NOT NULL,
	PRIMARY KEY (user_id, day)
);

CREATE TABLE IF NOT EXISTS queue_samples (
	minute TIMESTAMP WITHOUT TIME ZONE NOT NULL,
	model VARCHAR(200) NOT NULL,
	queued INTEGER NOT NULL,
	workers INTEGER NOT NULL,
	PRIMARY KEY (minute, model)
);

COMMIT;
