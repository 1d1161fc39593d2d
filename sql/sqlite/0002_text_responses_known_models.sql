-- sql/0002_text_responses_known_models.sql for SQLite: the columns and indexes it adds to the tables of the first
-- schema. The tables it creates (known_models, stored_responses, text_requests, text_request_models, text_jobs) a
-- start creates on SQLite from the models, as `python -m horde db upgrade` does before its steps.
-- No BEGIN or COMMIT: the runner runs a step in a transaction of its own, with its record. An ADD COLUMN of a
-- column the table has is left out by the runner (SQLite has no ADD COLUMN IF NOT EXISTS); every other statement
-- is idempotent. A new NOT NULL column gets its value for existing rows from a default, which SQLite keeps.

INSERT INTO known_models (name, first_declared_at)
SELECT DISTINCT model.value, datetime('now')
FROM workers, json_each(CASE WHEN json_type(workers.models) = 'array' THEN workers.models END) AS model
WHERE true
ON CONFLICT (name) DO NOTHING;

ALTER TABLE chat_requests ADD COLUMN client_address VARCHAR(64);
CREATE INDEX IF NOT EXISTS ix_chat_requests_address_created ON chat_requests (client_address, created_at);
DROP INDEX IF EXISTS ix_chat_requests_queue;
CREATE INDEX ix_chat_requests_queue ON chat_requests (state, priority_class, priority DESC, created_at, id);
DROP INDEX IF EXISTS ix_chat_requests_user_id;
CREATE INDEX IF NOT EXISTS ix_chat_requests_user_created ON chat_requests (user_id, created_at);

ALTER TABLE workers ADD COLUMN text_models JSON;
ALTER TABLE workers ADD COLUMN text_max_length INTEGER;
ALTER TABLE workers ADD COLUMN text_max_context_length INTEGER;
ALTER TABLE workers ADD COLUMN softprompts JSON;
ALTER TABLE workers ADD COLUMN nsfw BOOLEAN NOT NULL DEFAULT 0;
ALTER TABLE workers ADD COLUMN require_upfront_kudos BOOLEAN NOT NULL DEFAULT 0;
ALTER TABLE workers ADD COLUMN text_pop_at DATETIME;
CREATE INDEX IF NOT EXISTS ix_workers_text_pop_at ON workers (text_pop_at);
