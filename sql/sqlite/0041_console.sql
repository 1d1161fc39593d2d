-- SQLite's step of sql/0041_console.sql: the ledger's index by user and time replaces the one by user alone (the
-- new tables of the step are made from the models on start).
-- Idempotent.

CREATE INDEX IF NOT EXISTS ix_kudos_ledger_user_created ON kudos_ledger (user_id, created_at, id);
DROP INDEX IF EXISTS ix_kudos_ledger_user_id;
