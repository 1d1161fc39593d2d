-- The secret every server process shares to seal what a client reads back later (the Responses API's
-- reasoning.encrypted_content, horde/oai/sealing.py): made once, on the first start, unless HORDE_SECRET_KEY
-- is set. The server writes its row itself; this upgrade only makes the table.
--
-- Idempotent: applying it to a database created from the current 0001_schema.sql leaves its schema as it
-- was. One transaction: all or nothing.

BEGIN;

CREATE TABLE IF NOT EXISTS server_secrets (
	name VARCHAR(64) NOT NULL,
	value VARCHAR(128) NOT NULL,
	created_at TIMESTAMP WITHOUT TIME ZONE NOT NULL,
	PRIMARY KEY (name)
);

COMMIT;
