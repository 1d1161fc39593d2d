-- SQLite's step of sql/0015_roles_and_64_bit_kudos.sql: the new columns (SQLite's integers are 64-bit already).

ALTER TABLE users ADD COLUMN role VARCHAR(16) NOT NULL DEFAULT 'user';
ALTER TABLE kudos_ledger ADD COLUMN counterpart_id INTEGER;
