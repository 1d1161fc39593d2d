-- Upgrades a PostgreSQL database created from the first sql/0001_schema.sql (the chat broker before
-- the text API, the Responses API, known models and per-address rate limits) to the current schema.
--
-- Every statement is idempotent, so applying it to a database created from the current
-- 0001_schema.sql leaves its schema as it was (the queue index is rebuilt). One transaction: all
-- or nothing.
-- New NOT NULL columns get their value for existing rows from a temporary default, dropped at once
-- (the application always writes them). tests/integration/storage/test_migrations.py compares the result
-- with a database a start created from the models.

BEGIN;

-- Models any worker ever declared stay known (horde/workers/service.py): the workers seen so far.
CREATE TABLE IF NOT EXISTS known_models (
	name VARCHAR(200) NOT NULL,
	first_declared_at TIMESTAMP WITHOUT TIME ZONE NOT NULL,
	PRIMARY KEY (name)
);

INSERT INTO known_models (name, first_declared_at)
SELECT DISTINCT model.name, now() AT TIME ZONE 'UTC'
FROM workers, json_array_elements_text(CASE WHEN json_typeof(workers.models) = 'array' THEN workers.models END)
    AS model(name)
ON CONFLICT (name) DO NOTHING;

-- Chat requests: the client's address for the anonymous rate limit; the queue index in claim order.
ALTER TABLE chat_requests ADD COLUMN IF NOT EXISTS client_address VARCHAR(64);
CREATE INDEX IF NOT EXISTS ix_chat_requests_address_created ON chat_requests (client_address, created_at);
DROP INDEX IF EXISTS ix_chat_requests_queue;
CREATE INDEX ix_chat_requests_queue ON chat_requests (state, priority_class, priority DESC, created_at, id);
DROP INDEX IF EXISTS ix_chat_requests_user_id;
CREATE INDEX IF NOT EXISTS ix_chat_requests_user_created ON chat_requests (user_id, created_at);

-- Idempotency keys: room for the address that scopes an anonymous key.
ALTER TABLE idempotency_keys ALTER COLUMN key TYPE VARCHAR(320);

-- Workers: the text API's declarations.
ALTER TABLE workers ADD COLUMN IF NOT EXISTS text_models JSON;
ALTER TABLE workers ADD COLUMN IF NOT EXISTS text_max_length INTEGER;
ALTER TABLE workers ADD COLUMN IF NOT EXISTS text_max_context_length INTEGER;
ALTER TABLE workers ADD COLUMN IF NOT EXISTS softprompts JSON;
ALTER TABLE workers ADD COLUMN IF NOT EXISTS nsfw BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE workers ALTER COLUMN nsfw DROP DEFAULT;
ALTER TABLE workers ADD COLUMN IF NOT EXISTS require_upfront_kudos BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE workers ALTER COLUMN require_upfront_kudos DROP DEFAULT;
ALTER TABLE workers ADD COLUMN IF NOT EXISTS text_pop_at TIMESTAMP WITHOUT TIME ZONE;
CREATE INDEX IF NOT EXISTS ix_workers_text_pop_at ON workers (text_pop_at);

-- New tables: stored responses (POST /v1/responses) and the text API's requests, models and jobs.
CREATE TABLE IF NOT EXISTS stored_responses (
	id VARCHAR(64) NOT NULL,
	user_id INTEGER NOT NULL,
	request_id VARCHAR(36) NOT NULL,
	body JSON NOT NULL,
	conversation JSON NOT NULL,
	created_at TIMESTAMP WITHOUT TIME ZONE NOT NULL,
	expires_at TIMESTAMP WITHOUT TIME ZONE NOT NULL,
	PRIMARY KEY (id),
	FOREIGN KEY(user_id) REFERENCES users (id)
);
CREATE INDEX IF NOT EXISTS ix_stored_responses_expires_at ON stored_responses (expires_at);
CREATE INDEX IF NOT EXISTS ix_stored_responses_user_id ON stored_responses (user_id);

CREATE TABLE IF NOT EXISTS text_requests (
	id VARCHAR(36) NOT NULL,
	user_id INTEGER NOT NULL,
	state VARCHAR(16) NOT NULL,
	created_at TIMESTAMP WITHOUT TIME ZONE NOT NULL,
	finished_at TIMESTAMP WITHOUT TIME ZONE,
	priority_class INTEGER NOT NULL,
	priority INTEGER NOT NULL,
	models JSON NOT NULL,
	max_length INTEGER NOT NULL,
	max_context_length INTEGER NOT NULL,
	prompt_tokens INTEGER NOT NULL,
	softprompt VARCHAR(200),
	only_workers TEXT,
	blocked_workers TEXT,
	trusted_only BOOLEAN NOT NULL,
	slow_workers BOOLEAN NOT NULL,
	disable_batching BOOLEAN NOT NULL,
	nsfw BOOLEAN NOT NULL,
	upfront_paid BOOLEAN NOT NULL,
	prompt TEXT NOT NULL,
	params JSON NOT NULL,
	webhook TEXT,
	client_agent VARCHAR(300) NOT NULL,
	client_address VARCHAR(64),
	n INTEGER NOT NULL,
	waiting INTEGER NOT NULL,
	processing INTEGER NOT NULL,
	finished INTEGER NOT NULL,
	restarted INTEGER NOT NULL,
	cancelled BOOLEAN NOT NULL,
	kudos_estimate INTEGER NOT NULL,
	kudos_charged INTEGER NOT NULL,
	fault_rc VARCHAR(50),
	fault_message TEXT,
	body_hash VARCHAR(64),
	holders INTEGER NOT NULL,
	delivered BOOLEAN NOT NULL,
	PRIMARY KEY (id),
	FOREIGN KEY(user_id) REFERENCES users (id)
);
CREATE INDEX IF NOT EXISTS ix_text_requests_address_created ON text_requests (client_address, created_at);
CREATE INDEX IF NOT EXISTS ix_text_requests_body_hash ON text_requests (body_hash);
CREATE INDEX IF NOT EXISTS ix_text_requests_queue ON text_requests (state, priority_class, priority DESC, created_at, id);
CREATE INDEX IF NOT EXISTS ix_text_requests_user_created ON text_requests (user_id, created_at);

CREATE TABLE IF NOT EXISTS text_request_models (
	request_id VARCHAR(36) NOT NULL,
	model VARCHAR(200) NOT NULL,
	PRIMARY KEY (request_id, model),
	FOREIGN KEY(request_id) REFERENCES text_requests (id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS ix_text_request_models_model ON text_request_models (model);

CREATE TABLE IF NOT EXISTS text_jobs (
	id VARCHAR(36) NOT NULL,
	request_id VARCHAR(36) NOT NULL,
	worker_id VARCHAR(36) NOT NULL,
	worker_name VARCHAR(100) NOT NULL,
	model VARCHAR(200) NOT NULL,
	state VARCHAR(16) NOT NULL,
	started_at TIMESTAMP WITHOUT TIME ZONE NOT NULL,
	deadline_at TIMESTAMP WITHOUT TIME ZONE NOT NULL,
	ended_at TIMESTAMP WITHOUT TIME ZONE,
	text TEXT,
	seed BIGINT,
	generation_state VARCHAR(16),
	gen_metadata JSON,
	tokens INTEGER NOT NULL,
	kudos INTEGER NOT NULL,
	finish_reason VARCHAR(16),
	reason TEXT,
	PRIMARY KEY (id),
	FOREIGN KEY(request_id) REFERENCES text_requests (id) ON DELETE CASCADE,
	FOREIGN KEY(worker_id) REFERENCES workers (id)
);
CREATE INDEX IF NOT EXISTS ix_text_jobs_ended_at ON text_jobs (ended_at);
CREATE INDEX IF NOT EXISTS ix_text_jobs_request_id ON text_jobs (request_id);
CREATE INDEX IF NOT EXISTS ix_text_jobs_state_deadline ON text_jobs (state, deadline_at);
CREATE INDEX IF NOT EXISTS ix_text_jobs_worker_id ON text_jobs (worker_id);

COMMIT;
