-- SQLite's step of sql/0018_worker_names_pause_address.sql (the server fills the name keys at its start).

ALTER TABLE workers ADD COLUMN paused BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE workers ADD COLUMN name_key VARCHAR(400);
ALTER TABLE workers ADD COLUMN ip_address VARCHAR(64);
CREATE UNIQUE INDEX IF NOT EXISTS ix_workers_name_key ON workers (name_key);
