-- Registration (docs/reference/accounts.md#registration): names repeat, as on the AI Horde (`name#id` tells users
-- apart), so users.username loses its unique constraint and keeps an index for the lookups by name; invite codes,
-- the accounts made per client address and day, the OpenID Connect identities bound to accounts and the web page's
-- sign-in sessions.
--
-- Idempotent: applying it to a database created from the current 0001_schema.sql leaves its schema as it was.
-- One transaction: all or nothing.

BEGIN;

ALTER TABLE users DROP CONSTRAINT IF EXISTS users_username_key;
CREATE INDEX IF NOT EXISTS ix_users_username ON users (username);

CREATE TABLE IF NOT EXISTS invites (
	id SERIAL NOT NULL,
	code_hash VARCHAR(64) NOT NULL,
	uses INTEGER NOT NULL,
	used INTEGER NOT NULL,
	created_at TIMESTAMP WITHOUT TIME ZONE NOT NULL,
	expires_at TIMESTAMP WITHOUT TIME ZONE,
	PRIMARY KEY (id)
);
CREATE UNIQUE INDEX IF NOT EXISTS ix_invites_code_hash ON invites (code_hash);

CREATE TABLE IF NOT EXISTS registration_counts (
	client_address VARCHAR(64) NOT NULL,
	epoch_day INTEGER NOT NULL,
	registered INTEGER NOT NULL,
	PRIMARY KEY (client_address, epoch_day)
);

CREATE TABLE IF NOT EXISTS oidc_identities (
	issuer VARCHAR(255) NOT NULL,
	subject VARCHAR(255) NOT NULL,
	user_id INTEGER NOT NULL,
	created_at TIMESTAMP WITHOUT TIME ZONE NOT NULL,
	PRIMARY KEY (issuer, subject),
	FOREIGN KEY(user_id) REFERENCES users (id)
);
CREATE INDEX IF NOT EXISTS ix_oidc_identities_user_id ON oidc_identities (user_id);

CREATE TABLE IF NOT EXISTS sign_in_sessions (
	token_hash VARCHAR(64) NOT NULL,
	user_id INTEGER NOT NULL,
	csrf_token VARCHAR(64) NOT NULL,
	new_account BOOLEAN NOT NULL,
	created_at TIMESTAMP WITHOUT TIME ZONE NOT NULL,
	expires_at TIMESTAMP WITHOUT TIME ZONE NOT NULL,
	PRIMARY KEY (token_hash),
	FOREIGN KEY(user_id) REFERENCES users (id)
);
CREATE INDEX IF NOT EXISTS ix_sign_in_sessions_expires_at ON sign_in_sessions (expires_at);
CREATE INDEX IF NOT EXISTS ix_sign_in_sessions_user_id ON sign_in_sessions (user_id);

COMMIT;
