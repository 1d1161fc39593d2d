-- The stats endpoints stop walking the Horde's history: the sweeper rolls the chat requests served and the text
-- generations submitted up by minute, as cumulative counts (served_minutes), with each series' totals through its
-- mark (served_totals, served_marks); a window's count then reads a few rows and the raw rows of its edges, which
-- the partial indexes of done chat requests and submitted text jobs by state and end find (the text one replaces
-- the index by end alone: SQLite without statistics preferred the index by state and deadline to it, and walked
-- every submitted job).
--
-- The first sweeps after the upgrade roll the existing history up, a day of it per sweep; until they reach the
-- present, the stats read the rows the rollup has not reached yet. On a large table each CREATE INDEX takes a while
-- and holds off writes to its table meanwhile: apply it while the Horde is stopped, or build the indexes first
-- with CREATE INDEX CONCURRENTLY (outside a transaction).
--
-- Idempotent: applying it to a database created from the current 0001_schema.sql leaves its schema as it
-- was. One transaction: all or nothing.

BEGIN;

CREATE TABLE IF NOT EXISTS served_marks (
	series VARCHAR(16) NOT NULL,
	rolled_until TIMESTAMP WITHOUT TIME ZONE,
	PRIMARY KEY (series)
);

CREATE TABLE IF NOT EXISTS served_minutes (
	series VARCHAR(16) NOT NULL,
	model VARCHAR(200) NOT NULL,
	minute TIMESTAMP WITHOUT TIME ZONE NOT NULL,
	requests BIGINT NOT NULL,
	tokens BIGINT NOT NULL,
	PRIMARY KEY (series, model, minute)
);

CREATE TABLE IF NOT EXISTS served_totals (
	series VARCHAR(16) NOT NULL,
	model VARCHAR(200) NOT NULL,
	requests BIGINT NOT NULL,
	tokens BIGINT NOT NULL,
	PRIMARY KEY (series, model)
);

CREATE INDEX IF NOT EXISTS ix_chat_requests_done_finished ON chat_requests (state, finished_at) WHERE state = 'done';
CREATE INDEX IF NOT EXISTS ix_text_jobs_submitted_ended ON text_jobs (state, ended_at) WHERE state = 'submitted';
DROP INDEX IF EXISTS ix_text_jobs_ended_at;

COMMIT;
