-- What moderators set on a user (PUT /api/v2/users/{id}, docs/reference/moderation.md): a flag (its workers take no
-- jobs, it sends and receives no kudos), its concurrency (requests of one kind waiting or running at once), its
-- usage multiplier (what its requests cost), the workers it may add in invite-only mode, whether its workers are
-- public, its contact and the moderators' note, when it was deleted (its row stays for its ledger entries), and
-- the kudos moderators awarded it (POST /api/v2/kudos/award), as a running total of the ledger's `awarded` entries.
--
-- Idempotent: applying it to a database created from the current 0001_schema.sql leaves its schema as it was.
-- Every NOT NULL column has its database default, which existing rows take. One transaction: all or nothing.

BEGIN;

ALTER TABLE users ADD COLUMN IF NOT EXISTS kudos_awarded BIGINT NOT NULL DEFAULT 0;
ALTER TABLE users ADD COLUMN IF NOT EXISTS flagged BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE users ADD COLUMN IF NOT EXISTS concurrency INTEGER NOT NULL DEFAULT 30;
ALTER TABLE users ADD COLUMN IF NOT EXISTS usage_multiplier FLOAT NOT NULL DEFAULT 1.0;
ALTER TABLE users ADD COLUMN IF NOT EXISTS worker_invited INTEGER NOT NULL DEFAULT 0;
ALTER TABLE users ADD COLUMN IF NOT EXISTS public_workers BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE users ADD COLUMN IF NOT EXISTS contact VARCHAR(500);
ALTER TABLE users ADD COLUMN IF NOT EXISTS admin_comment VARCHAR(500);
ALTER TABLE users ADD COLUMN IF NOT EXISTS deleted_at TIMESTAMP WITHOUT TIME ZONE;

COMMIT;
