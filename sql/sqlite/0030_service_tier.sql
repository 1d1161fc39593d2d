-- The flex tier on SQLite: the same columns as sql/0030_service_tier.sql (SQLite creates missing tables on start,
-- not missing columns). Applied once, by the tracked migrations.

ALTER TABLE chat_requests ADD COLUMN service_tier VARCHAR(8) NOT NULL DEFAULT 'default';
ALTER TABLE text_requests ADD COLUMN service_tier VARCHAR(8) NOT NULL DEFAULT 'default';
