-- SQLite's step of sql/0016_user_moderation.sql: the same columns, with the same defaults.

ALTER TABLE users ADD COLUMN kudos_awarded BIGINT NOT NULL DEFAULT 0;
ALTER TABLE users ADD COLUMN flagged BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE users ADD COLUMN concurrency INTEGER NOT NULL DEFAULT 30;
ALTER TABLE users ADD COLUMN usage_multiplier FLOAT NOT NULL DEFAULT 1.0;
ALTER TABLE users ADD COLUMN worker_invited INTEGER NOT NULL DEFAULT 0;
ALTER TABLE users ADD COLUMN public_workers BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE users ADD COLUMN contact VARCHAR(500);
ALTER TABLE users ADD COLUMN admin_comment VARCHAR(500);
ALTER TABLE users ADD COLUMN deleted_at DATETIME;
