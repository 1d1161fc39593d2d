-- sql/0012_worker_maintenance_info_deleted.sql for SQLite. A new NOT NULL column gets its value for existing rows
-- from a default, which SQLite keeps.

ALTER TABLE workers ADD COLUMN maintenance BOOLEAN NOT NULL DEFAULT 0;
ALTER TABLE workers ADD COLUMN maintenance_msg VARCHAR(300);
ALTER TABLE workers ADD COLUMN info VARCHAR(1000);
ALTER TABLE workers ADD COLUMN deleted_at DATETIME;
