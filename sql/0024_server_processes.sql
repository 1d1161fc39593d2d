-- The serving processes that share the database without Redis, each renewing its row every second, so that each
-- knows whether another shares it and reads the database to hear it (horde/presence/hearing.py). The servers
-- write the rows themselves; this step only makes the table. SQLite needs no file for it: a start creates it.
--
-- Idempotent: applying it to a database created from the current 0001_schema.sql leaves its schema as it
-- was. One transaction: all or nothing.

BEGIN;

CREATE TABLE IF NOT EXISTS server_processes (
	id VARCHAR(32) NOT NULL,
	host VARCHAR(255) NOT NULL,
	pid INTEGER NOT NULL,
	started_at TIMESTAMP WITHOUT TIME ZONE NOT NULL,
	seen_at TIMESTAMP WITHOUT TIME ZONE NOT NULL,
	PRIMARY KEY (id)
);

COMMIT;
