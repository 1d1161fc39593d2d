-- SQLite's step of sql/0040_registration.sql: users.username loses its unique constraint (names repeat) and gets
-- an index for the lookups by name. SQLite cannot drop a constraint, so the table is made again with every row
-- kept, ids included (the new tables of the step are made from the models on start).
--
-- The rows referencing users (requests, workers, the ledger, ...) stay valid throughout: foreign keys are checked at
-- the commit (defer_foreign_keys, for this transaction only), by which time every user is back under its id. The
-- column list is the users table's at this step, the moderation's columns of 0016 included: a step that adds a
-- users column must come after this one (a database with another column stops this step, below, rather than lose
-- it).
-- Idempotent: on a table without the constraint it makes the same table again.

PRAGMA defer_foreign_keys = ON;

-- A users column this step does not know (one added by a step numbered before it) would be lost by the copy
-- below: the insert fails its check instead, and the whole step rolls back.
DROP TABLE IF EXISTS temp.users_columns_unknown_to_0040;
CREATE TEMP TABLE users_columns_unknown_to_0040 (unknown INTEGER CHECK (unknown = 0));
INSERT INTO users_columns_unknown_to_0040
SELECT count(*) FROM pragma_table_info('users')
WHERE name NOT IN ('id', 'username', 'api_key_hash', 'kudos', 'trusted', 'anonymous', 'created_at', 'role',
                   'kudos_accumulated', 'kudos_gifted', 'kudos_received', 'kudos_admin', 'kudos_awarded',
                   'requested_generations', 'requested_tokens', 'fulfilled_generations', 'fulfilled_tokens', 'flagged',
                   'concurrency', 'usage_multiplier', 'worker_invited', 'public_workers', 'contact', 'admin_comment',
                   'deleted_at');
DROP TABLE temp.users_columns_unknown_to_0040;

DROP TABLE IF EXISTS users_before_0040;
CREATE TABLE users_before_0040 AS SELECT * FROM users;
DROP TABLE users;

CREATE TABLE users (
	id INTEGER NOT NULL,
	username VARCHAR(100) NOT NULL,
	api_key_hash VARCHAR(64) NOT NULL,
	kudos BIGINT NOT NULL,
	trusted BOOLEAN NOT NULL,
	anonymous BOOLEAN NOT NULL,
	created_at DATETIME NOT NULL,
	role VARCHAR(16) DEFAULT 'user' NOT NULL,
	kudos_accumulated BIGINT DEFAULT 0 NOT NULL,
	kudos_gifted BIGINT DEFAULT 0 NOT NULL,
	kudos_received BIGINT DEFAULT 0 NOT NULL,
	kudos_admin BIGINT DEFAULT 0 NOT NULL,
	kudos_awarded BIGINT DEFAULT 0 NOT NULL,
	requested_generations INTEGER DEFAULT 0 NOT NULL,
	requested_tokens BIGINT DEFAULT 0 NOT NULL,
	fulfilled_generations INTEGER DEFAULT 0 NOT NULL,
	fulfilled_tokens BIGINT DEFAULT 0 NOT NULL,
	flagged BOOLEAN DEFAULT false NOT NULL,
	concurrency INTEGER DEFAULT 30 NOT NULL,
	usage_multiplier FLOAT DEFAULT 1.0 NOT NULL,
	worker_invited INTEGER DEFAULT 0 NOT NULL,
	public_workers BOOLEAN DEFAULT false NOT NULL,
	contact VARCHAR(500),
	admin_comment VARCHAR(500),
	deleted_at DATETIME,
	PRIMARY KEY (id)
);

INSERT INTO users (id, username, api_key_hash, kudos, trusted, anonymous, created_at, role, kudos_accumulated,
                   kudos_gifted, kudos_received, kudos_admin, kudos_awarded, requested_generations, requested_tokens,
                   fulfilled_generations, fulfilled_tokens, flagged, concurrency, usage_multiplier, worker_invited,
                   public_workers, contact, admin_comment, deleted_at)
SELECT id, username, api_key_hash, kudos, trusted, anonymous, created_at, role, kudos_accumulated, kudos_gifted,
       kudos_received, kudos_admin, kudos_awarded, requested_generations, requested_tokens, fulfilled_generations,
       fulfilled_tokens, flagged, concurrency, usage_multiplier, worker_invited, public_workers, contact,
       admin_comment, deleted_at
FROM users_before_0040;

DROP TABLE users_before_0040;

CREATE UNIQUE INDEX IF NOT EXISTS ix_users_api_key_hash ON users (api_key_hash);
CREATE INDEX IF NOT EXISTS ix_users_username ON users (username);
