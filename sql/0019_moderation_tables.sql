-- The moderators' tables (docs/reference/moderation.md): the Horde's modes (one row; none: every mode off), the
-- addresses and networks in timeout (POST /api/v2/operations/ipaddr), and the audit trail of every moderator's and
-- admin's action, which a trigger keeps append-only (an UPDATE or a DELETE of an entry fails).
--
-- Idempotent: applying it to a database created from the current 0001_schema.sql leaves its schema as it was. The
-- server also creates missing tables at its start (on SQLite, with the trail's own triggers). One transaction.

BEGIN;

CREATE TABLE IF NOT EXISTS horde_modes (
	id INTEGER NOT NULL, 
	maintenance_mode BOOLEAN NOT NULL, 
	invite_only_mode BOOLEAN NOT NULL, 
	raid_mode BOOLEAN NOT NULL, 
	changed_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
	PRIMARY KEY (id)
);

CREATE TABLE IF NOT EXISTS address_timeouts (
	network VARCHAR(50) NOT NULL, 
	expires_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
	created_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
	PRIMARY KEY (network)
);

CREATE INDEX IF NOT EXISTS ix_address_timeouts_expires_at ON address_timeouts (expires_at);

CREATE TABLE IF NOT EXISTS audit_entries (
	id SERIAL NOT NULL, 
	at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
	actor_id INTEGER, 
	actor VARCHAR(160) NOT NULL, 
	action VARCHAR(40) NOT NULL, 
	target_kind VARCHAR(16) NOT NULL, 
	target VARCHAR(160) NOT NULL, 
	before JSON, 
	after JSON, 
	reason VARCHAR(500), 
	PRIMARY KEY (id)
);

CREATE INDEX IF NOT EXISTS ix_audit_entries_actor ON audit_entries (actor_id, id);
CREATE INDEX IF NOT EXISTS ix_audit_entries_target ON audit_entries (target_kind, target, id);

CREATE OR REPLACE FUNCTION horde_audit_append_only()
RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the audit trail is append-only: an entry is never changed nor deleted';
END
$$;

CREATE OR REPLACE TRIGGER audit_entries_append_only BEFORE UPDATE OR DELETE ON audit_entries FOR EACH ROW EXECUTE FUNCTION horde_audit_append_only();

COMMIT;
