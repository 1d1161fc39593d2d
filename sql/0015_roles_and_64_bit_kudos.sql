-- Roles and 64-bit kudos (docs/reference/accounts.md, the authorization table): a user's role (user, moderator,
-- admin); every stored amount of kudos in a 64-bit integer (a balance, its running totals, a ledger entry); a
-- ledger entry names the other user of a gift, or the moderator of an award or adjustment.
--
-- Widening an INTEGER column to BIGINT rewrites its table and holds off writes to it meanwhile: on a large
-- kudos_ledger, apply it while the Horde is stopped.
--
-- Idempotent: applying it to a database created from the current 0001_schema.sql leaves its schema as it
-- was (a column already BIGINT is left as it is). One transaction: all or nothing.

BEGIN;

ALTER TABLE users ADD COLUMN IF NOT EXISTS role VARCHAR(16) NOT NULL DEFAULT 'user';
ALTER TABLE users ALTER COLUMN kudos TYPE BIGINT;
ALTER TABLE users ALTER COLUMN kudos_accumulated TYPE BIGINT;
ALTER TABLE users ALTER COLUMN kudos_gifted TYPE BIGINT;
ALTER TABLE users ALTER COLUMN kudos_received TYPE BIGINT;
ALTER TABLE users ALTER COLUMN kudos_admin TYPE BIGINT;
ALTER TABLE kudos_ledger ALTER COLUMN amount TYPE BIGINT;
ALTER TABLE kudos_ledger ADD COLUMN IF NOT EXISTS counterpart_id INTEGER;

COMMIT;
