-- The first schema (tests/support/sql/0001_schema_first.sql) as SQLite holds it: the tables SQLAlchemy made on
-- SQLite from the models of that time. The database tests/integration/storage/test_migrations.py upgrades on SQLite.

CREATE TABLE users (
	id INTEGER NOT NULL,
	username VARCHAR(100) NOT NULL,
	api_key_hash VARCHAR(64) NOT NULL,
	kudos INTEGER NOT NULL,
	trusted BOOLEAN NOT NULL,
	anonymous BOOLEAN NOT NULL,
	created_at DATETIME NOT NULL,
	PRIMARY KEY (id),
	UNIQUE (username)
);
CREATE UNIQUE INDEX ix_users_api_key_hash ON users (api_key_hash);

CREATE TABLE chat_requests (
	id VARCHAR(36) NOT NULL,
	user_id INTEGER NOT NULL,
	state VARCHAR(16) NOT NULL,
	created_at DATETIME NOT NULL,
	finished_at DATETIME,
	priority_class INTEGER NOT NULL,
	priority INTEGER NOT NULL,
	models JSON NOT NULL,
	max_tokens INTEGER NOT NULL,
	context_tokens INTEGER NOT NULL,
	prompt_tokens INTEGER NOT NULL,
	required_features INTEGER NOT NULL,
	required_guarantees INTEGER NOT NULL,
	tools_temperature FLOAT,
	only_workers TEXT,
	trusted_only BOOLEAN NOT NULL,
	payload JSON NOT NULL,
	n_images INTEGER NOT NULL,
	kudos_estimate INTEGER NOT NULL,
	kudos_charged INTEGER NOT NULL,
	context_adjustments JSON,
	client_agent VARCHAR(300) NOT NULL,
	body_hash VARCHAR(64),
	holders INTEGER NOT NULL,
	delivered BOOLEAN NOT NULL,
	attempts INTEGER NOT NULL,
	current_job_id VARCHAR(36),
	worker_id VARCHAR(36),
	worker_name VARCHAR(100),
	served_model VARCHAR(200),
	reply JSON,
	progress_content TEXT,
	progress_reasoning TEXT,
	progress_seq INTEGER NOT NULL,
	fault_rc VARCHAR(50),
	fault_message TEXT,
	PRIMARY KEY (id),
	FOREIGN KEY(user_id) REFERENCES users (id)
);
CREATE INDEX ix_chat_requests_body_hash ON chat_requests (body_hash);
CREATE INDEX ix_chat_requests_queue ON chat_requests (state, priority_class, priority, created_at);
CREATE INDEX ix_chat_requests_user_id ON chat_requests (user_id);

CREATE TABLE idempotency_keys (
	id INTEGER NOT NULL,
	user_id INTEGER NOT NULL,
	"key" VARCHAR(255) NOT NULL,
	body_hash VARCHAR(64) NOT NULL,
	request_id VARCHAR(36),
	created_at DATETIME NOT NULL,
	expires_at DATETIME NOT NULL,
	PRIMARY KEY (id),
	FOREIGN KEY(user_id) REFERENCES users (id),
	CONSTRAINT uq_idempotency_user_key UNIQUE (user_id, "key")
);
CREATE INDEX ix_idempotency_keys_expires_at ON idempotency_keys (expires_at);

CREATE TABLE kudos_ledger (
	id INTEGER NOT NULL,
	user_id INTEGER NOT NULL,
	amount INTEGER NOT NULL,
	kind VARCHAR(16) NOT NULL,
	request_id VARCHAR(36),
	created_at DATETIME NOT NULL,
	PRIMARY KEY (id),
	FOREIGN KEY(user_id) REFERENCES users (id)
);
CREATE INDEX ix_kudos_ledger_request_id ON kudos_ledger (request_id);
CREATE INDEX ix_kudos_ledger_user_id ON kudos_ledger (user_id);

CREATE TABLE workers (
	id VARCHAR(36) NOT NULL,
	name VARCHAR(100) NOT NULL,
	owner_id INTEGER NOT NULL,
	models JSON NOT NULL,
	max_length INTEGER NOT NULL,
	max_context_length INTEGER NOT NULL,
	threads INTEGER NOT NULL,
	features_mask INTEGER NOT NULL,
	guarantees_mask INTEGER NOT NULL,
	max_temperature_with_tools FLOAT,
	bridge_agent VARCHAR(300) NOT NULL,
	last_pop_at DATETIME NOT NULL,
	created_at DATETIME NOT NULL,
	PRIMARY KEY (id),
	FOREIGN KEY(owner_id) REFERENCES users (id),
	UNIQUE (name)
);
CREATE INDEX ix_workers_last_pop_at ON workers (last_pop_at);
CREATE INDEX ix_workers_owner_id ON workers (owner_id);

CREATE TABLE chat_jobs (
	id VARCHAR(36) NOT NULL,
	request_id VARCHAR(36) NOT NULL,
	worker_id VARCHAR(36) NOT NULL,
	model VARCHAR(200) NOT NULL,
	state VARCHAR(16) NOT NULL,
	started_at DATETIME NOT NULL,
	deadline_at DATETIME NOT NULL,
	ended_at DATETIME,
	reason TEXT,
	PRIMARY KEY (id),
	FOREIGN KEY(request_id) REFERENCES chat_requests (id) ON DELETE CASCADE,
	FOREIGN KEY(worker_id) REFERENCES workers (id)
);
CREATE INDEX ix_chat_jobs_request_id ON chat_jobs (request_id);
CREATE INDEX ix_chat_jobs_state_deadline ON chat_jobs (state, deadline_at);
CREATE INDEX ix_chat_jobs_worker_id ON chat_jobs (worker_id);

CREATE TABLE chat_request_models (
	request_id VARCHAR(36) NOT NULL,
	model VARCHAR(200) NOT NULL,
	PRIMARY KEY (request_id, model),
	FOREIGN KEY(request_id) REFERENCES chat_requests (id) ON DELETE CASCADE
);
CREATE INDEX ix_chat_request_models_model ON chat_request_models (model);

