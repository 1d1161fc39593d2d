CREATE TABLE address_timeouts (
	network VARCHAR(50) NOT NULL, 
	expires_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
	created_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
	PRIMARY KEY (network)
);

CREATE INDEX ix_address_timeouts_expires_at ON address_timeouts (expires_at);

CREATE TABLE applied_migrations (
	name VARCHAR(200) NOT NULL, 
	checksum VARCHAR(64) NOT NULL, 
	applied_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
	PRIMARY KEY (name)
);


CREATE TABLE audit_entries (
	id SERIAL NOT NULL, 
	at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
	actor_id INTEGER, 
	actor VARCHAR(160) NOT NULL, 
	action VARCHAR(40) NOT NULL, 
	target_kind VARCHAR(16) NOT NULL, 
	target VARCHAR(160) NOT NULL, 
	before JSON, 
	after JSON, 
	reason VARCHAR(500), 
	PRIMARY KEY (id)
);

CREATE INDEX ix_audit_entries_actor ON audit_entries (actor_id, id);
CREATE INDEX ix_audit_entries_target ON audit_entries (target_kind, target, id);

CREATE TABLE horde_modes (
	id INTEGER NOT NULL, 
	maintenance_mode BOOLEAN NOT NULL, 
	invite_only_mode BOOLEAN NOT NULL, 
	raid_mode BOOLEAN NOT NULL, 
	changed_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
	PRIMARY KEY (id)
);


CREATE TABLE invites (
	id SERIAL NOT NULL, 
	code_hash VARCHAR(64) NOT NULL, 
	uses INTEGER NOT NULL, 
	used INTEGER NOT NULL, 
	created_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
	expires_at TIMESTAMP WITHOUT TIME ZONE, 
	PRIMARY KEY (id)
);

CREATE UNIQUE INDEX ix_invites_code_hash ON invites (code_hash);

CREATE TABLE known_models (
	name VARCHAR(200) NOT NULL, 
	first_declared_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
	PRIMARY KEY (name)
);


CREATE TABLE known_text_models (
	name VARCHAR(200) NOT NULL, 
	first_declared_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
	PRIMARY KEY (name)
);


CREATE TABLE progress_entries (
	request_id VARCHAR(36) NOT NULL, 
	seq INTEGER NOT NULL, 
	job_id VARCHAR(36) NOT NULL, 
	content TEXT NOT NULL, 
	reasoning TEXT NOT NULL, 
	PRIMARY KEY (request_id, seq)
);


CREATE TABLE queue_samples (
	minute TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
	model VARCHAR(200) NOT NULL, 
	queued INTEGER NOT NULL, 
	workers INTEGER NOT NULL, 
	PRIMARY KEY (minute, model)
);


CREATE TABLE rate_counts (
	user_id INTEGER NOT NULL, 
	client_address VARCHAR(64) NOT NULL, 
	epoch_second BIGINT NOT NULL, 
	admitted INTEGER NOT NULL, 
	PRIMARY KEY (user_id, client_address, epoch_second)
);


CREATE TABLE registration_counts (
	client_address VARCHAR(64) NOT NULL, 
	epoch_day INTEGER NOT NULL, 
	registered INTEGER NOT NULL, 
	PRIMARY KEY (client_address, epoch_day)
);


CREATE TABLE served_marks (
	series VARCHAR(16) NOT NULL, 
	rolled_until TIMESTAMP WITHOUT TIME ZONE, 
	PRIMARY KEY (series)
);


CREATE TABLE served_minutes (
	series VARCHAR(16) NOT NULL, 
	model VARCHAR(200) NOT NULL, 
	minute TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
	requests BIGINT NOT NULL, 
	tokens BIGINT NOT NULL, 
	PRIMARY KEY (series, model, minute)
);


CREATE TABLE served_totals (
	series VARCHAR(16) NOT NULL, 
	model VARCHAR(200) NOT NULL, 
	requests BIGINT NOT NULL, 
	tokens BIGINT NOT NULL, 
	PRIMARY KEY (series, model)
);


CREATE TABLE server_processes (
	id VARCHAR(32) NOT NULL, 
	host VARCHAR(255) NOT NULL, 
	pid INTEGER NOT NULL, 
	started_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
	seen_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
	PRIMARY KEY (id)
);


CREATE TABLE server_secrets (
	name VARCHAR(64) NOT NULL, 
	value VARCHAR(128) NOT NULL, 
	created_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
	PRIMARY KEY (name)
);


CREATE TABLE user_usage_days (
	user_id INTEGER NOT NULL, 
	day DATE NOT NULL, 
	requests BIGINT NOT NULL, 
	tokens BIGINT NOT NULL, 
	PRIMARY KEY (user_id, day)
);


CREATE TABLE users (
	id SERIAL NOT NULL, 
	username VARCHAR(100) NOT NULL, 
	api_key_hash VARCHAR(64) NOT NULL, 
	kudos BIGINT NOT NULL, 
	trusted BOOLEAN NOT NULL, 
	anonymous BOOLEAN NOT NULL, 
	created_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
	role VARCHAR(16) DEFAULT 'user' NOT NULL, 
	kudos_accumulated BIGINT DEFAULT 0 NOT NULL, 
	kudos_gifted BIGINT DEFAULT 0 NOT NULL, 
	kudos_received BIGINT DEFAULT 0 NOT NULL, 
	kudos_admin BIGINT DEFAULT 0 NOT NULL, 
	kudos_awarded BIGINT DEFAULT 0 NOT NULL, 
	requested_generations INTEGER DEFAULT 0 NOT NULL, 
	requested_tokens BIGINT DEFAULT 0 NOT NULL, 
	fulfilled_generations INTEGER DEFAULT 0 NOT NULL, 
	fulfilled_tokens BIGINT DEFAULT 0 NOT NULL, 
	flagged BOOLEAN DEFAULT false NOT NULL, 
	concurrency INTEGER DEFAULT 30 NOT NULL, 
	usage_multiplier FLOAT DEFAULT 1.0 NOT NULL, 
	worker_invited INTEGER DEFAULT 0 NOT NULL, 
	public_workers BOOLEAN DEFAULT false NOT NULL, 
	contact VARCHAR(500), 
	admin_comment VARCHAR(500), 
	deleted_at TIMESTAMP WITHOUT TIME ZONE, 
	PRIMARY KEY (id)
);

CREATE UNIQUE INDEX ix_users_api_key_hash ON users (api_key_hash);
CREATE INDEX ix_users_username ON users (username);

CREATE TABLE background_requests (
	id VARCHAR(64) NOT NULL, 
	user_id INTEGER NOT NULL, 
	request_id VARCHAR(36) NOT NULL, 
	recipe JSON NOT NULL, 
	created_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
	expires_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
	PRIMARY KEY (id), 
	FOREIGN KEY(user_id) REFERENCES users (id), 
	UNIQUE (request_id)
);

CREATE INDEX ix_background_requests_expires_at ON background_requests (expires_at);
CREATE INDEX ix_background_requests_user_id ON background_requests (user_id);

CREATE TABLE batches (
	id VARCHAR(40) NOT NULL, 
	user_id INTEGER NOT NULL, 
	shared_key_id VARCHAR(36), 
	endpoint VARCHAR(32) NOT NULL, 
	input_file_id VARCHAR(40) NOT NULL, 
	completion_window VARCHAR(8) NOT NULL, 
	metadata JSON, 
	status VARCHAR(16) NOT NULL, 
	errors JSON, 
	output_expires_after_s INTEGER, 
	ending VARCHAR(16), 
	created_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
	expires_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
	in_progress_at TIMESTAMP WITHOUT TIME ZONE, 
	finalizing_at TIMESTAMP WITHOUT TIME ZONE, 
	completed_at TIMESTAMP WITHOUT TIME ZONE, 
	failed_at TIMESTAMP WITHOUT TIME ZONE, 
	expired_at TIMESTAMP WITHOUT TIME ZONE, 
	cancelling_at TIMESTAMP WITHOUT TIME ZONE, 
	cancelled_at TIMESTAMP WITHOUT TIME ZONE, 
	total INTEGER NOT NULL, 
	completed INTEGER NOT NULL, 
	failed INTEGER NOT NULL, 
	output_file_id VARCHAR(40), 
	error_file_id VARCHAR(40), 
	output_bytes BIGINT NOT NULL, 
	error_bytes BIGINT NOT NULL, 
	input_tokens BIGINT NOT NULL, 
	cached_tokens BIGINT NOT NULL, 
	output_tokens BIGINT NOT NULL, 
	reasoning_tokens BIGINT NOT NULL, 
	kudos_charged BIGINT NOT NULL, 
	next_line INTEGER NOT NULL, 
	next_offset BIGINT NOT NULL, 
	in_flight INTEGER NOT NULL, 
	lease_owner VARCHAR(64), 
	lease_until TIMESTAMP WITHOUT TIME ZONE, 
	PRIMARY KEY (id), 
	FOREIGN KEY(user_id) REFERENCES users (id)
);

CREATE INDEX ix_batches_status_lease ON batches (status, lease_until);
CREATE INDEX ix_batches_user_created ON batches (user_id, created_at, id);

CREATE TABLE chat_requests (
	id VARCHAR(36) NOT NULL, 
	user_id INTEGER NOT NULL, 
	shared_key_id VARCHAR(36), 
	state VARCHAR(16) NOT NULL, 
	created_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
	finished_at TIMESTAMP WITHOUT TIME ZONE, 
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
	usage_multiplier FLOAT DEFAULT 1.0 NOT NULL, 
	context_adjustments JSON, 
	client_agent VARCHAR(300) NOT NULL, 
	client_address VARCHAR(64), 
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
	progress_log INTEGER DEFAULT 0 NOT NULL, 
	fault_rc VARCHAR(50), 
	fault_message TEXT, 
	conversation_key VARCHAR(32), 
	reserved_worker_id VARCHAR(36), 
	reserved_until TIMESTAMP WITHOUT TIME ZONE, 
	service_tier VARCHAR(8) DEFAULT 'default' NOT NULL, 
	batch_line BOOLEAN DEFAULT false NOT NULL, 
	PRIMARY KEY (id), 
	FOREIGN KEY(user_id) REFERENCES users (id)
);

CREATE INDEX ix_chat_requests_body_hash ON chat_requests (body_hash);
CREATE INDEX ix_chat_requests_conversation ON chat_requests (conversation_key, created_at);
CREATE INDEX ix_chat_requests_counted_in_flight ON chat_requests (user_id) WHERE state IN ('waiting', 'processing') AND NOT batch_line;
CREATE INDEX ix_chat_requests_done_finished ON chat_requests (state, finished_at) WHERE state = 'done';
CREATE INDEX ix_chat_requests_queue ON chat_requests (state, priority_class, priority DESC, created_at, id);
CREATE INDEX ix_chat_requests_reserved ON chat_requests (state, reserved_worker_id, priority_class, priority DESC, created_at, id) WHERE state = 'waiting' AND reserved_worker_id IS NOT NULL;
CREATE INDEX ix_chat_requests_shared_key ON chat_requests (shared_key_id, state) WHERE shared_key_id IS NOT NULL;
CREATE INDEX ix_chat_requests_user_created ON chat_requests (user_id, created_at);

CREATE TABLE files (
	id VARCHAR(40) NOT NULL, 
	user_id INTEGER NOT NULL, 
	purpose VARCHAR(16) NOT NULL, 
	filename VARCHAR(255) NOT NULL, 
	bytes BIGINT NOT NULL, 
	status VARCHAR(16) NOT NULL, 
	store VARCHAR(16) NOT NULL, 
	batch_id VARCHAR(40), 
	created_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
	expires_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
	PRIMARY KEY (id), 
	FOREIGN KEY(user_id) REFERENCES users (id)
);

CREATE INDEX ix_files_expires_at ON files (expires_at);
CREATE INDEX ix_files_user_created ON files (user_id, created_at, id);

CREATE TABLE idempotency_keys (
	id SERIAL NOT NULL, 
	user_id INTEGER NOT NULL, 
	key VARCHAR(320) NOT NULL, 
	body_hash VARCHAR(64) NOT NULL, 
	request_id VARCHAR(36), 
	created_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
	expires_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
	PRIMARY KEY (id), 
	CONSTRAINT uq_idempotency_user_key UNIQUE (user_id, key), 
	FOREIGN KEY(user_id) REFERENCES users (id)
);

CREATE INDEX ix_idempotency_keys_expires_at ON idempotency_keys (expires_at);

CREATE TABLE kudos_ledger (
	id SERIAL NOT NULL, 
	user_id INTEGER NOT NULL, 
	amount BIGINT NOT NULL, 
	kind VARCHAR(16) NOT NULL, 
	request_id VARCHAR(36), 
	created_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
	counterpart_id INTEGER, 
	PRIMARY KEY (id), 
	FOREIGN KEY(user_id) REFERENCES users (id)
);

CREATE INDEX ix_kudos_ledger_request_id ON kudos_ledger (request_id);
CREATE INDEX ix_kudos_ledger_user_created ON kudos_ledger (user_id, created_at, id);

CREATE TABLE oidc_identities (
	issuer VARCHAR(255) NOT NULL, 
	subject VARCHAR(255) NOT NULL, 
	user_id INTEGER NOT NULL, 
	created_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
	PRIMARY KEY (issuer, subject), 
	FOREIGN KEY(user_id) REFERENCES users (id)
);

CREATE INDEX ix_oidc_identities_user_id ON oidc_identities (user_id);

CREATE TABLE shared_keys (
	id VARCHAR(36) NOT NULL, 
	user_id INTEGER NOT NULL, 
	name VARCHAR(255), 
	kudos_limit BIGINT NOT NULL, 
	utilized BIGINT NOT NULL, 
	expires_at TIMESTAMP WITHOUT TIME ZONE, 
	max_image_pixels INTEGER NOT NULL, 
	max_image_steps INTEGER NOT NULL, 
	max_text_tokens INTEGER NOT NULL, 
	created_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
	PRIMARY KEY (id), 
	FOREIGN KEY(user_id) REFERENCES users (id)
);

CREATE INDEX ix_shared_keys_user_id ON shared_keys (user_id);

CREATE TABLE sign_in_sessions (
	token_hash VARCHAR(64) NOT NULL, 
	user_id INTEGER NOT NULL, 
	csrf_token VARCHAR(64) NOT NULL, 
	new_account BOOLEAN NOT NULL, 
	created_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
	expires_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
	PRIMARY KEY (token_hash), 
	FOREIGN KEY(user_id) REFERENCES users (id)
);

CREATE INDEX ix_sign_in_sessions_expires_at ON sign_in_sessions (expires_at);
CREATE INDEX ix_sign_in_sessions_user_id ON sign_in_sessions (user_id);

CREATE TABLE stored_responses (
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

CREATE INDEX ix_stored_responses_expires_at ON stored_responses (expires_at);
CREATE INDEX ix_stored_responses_user_id ON stored_responses (user_id);

CREATE TABLE text_requests (
	id VARCHAR(36) NOT NULL, 
	user_id INTEGER NOT NULL, 
	shared_key_id VARCHAR(36), 
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
	usage_multiplier FLOAT DEFAULT 1.0 NOT NULL, 
	fault_rc VARCHAR(50), 
	fault_message TEXT, 
	body_hash VARCHAR(64), 
	holders INTEGER NOT NULL, 
	delivered BOOLEAN NOT NULL, 
	service_tier VARCHAR(8) DEFAULT 'default' NOT NULL, 
	batch_line BOOLEAN DEFAULT false NOT NULL, 
	PRIMARY KEY (id), 
	FOREIGN KEY(user_id) REFERENCES users (id)
);

CREATE INDEX ix_text_requests_body_hash ON text_requests (body_hash);
CREATE INDEX ix_text_requests_counted_in_flight ON text_requests (user_id) WHERE state IN ('waiting', 'processing') AND NOT batch_line;
CREATE INDEX ix_text_requests_queue ON text_requests (state, priority_class, priority DESC, created_at, id);
CREATE INDEX ix_text_requests_shared_key ON text_requests (shared_key_id, state) WHERE shared_key_id IS NOT NULL;
CREATE INDEX ix_text_requests_user_created ON text_requests (user_id, created_at);

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
	last_pop_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
	created_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
	text_models JSON, 
	text_max_length INTEGER, 
	text_max_context_length INTEGER, 
	softprompts JSON, 
	nsfw BOOLEAN NOT NULL, 
	require_upfront_kudos BOOLEAN NOT NULL, 
	text_pop_at TIMESTAMP WITHOUT TIME ZONE, 
	maintenance BOOLEAN NOT NULL, 
	maintenance_msg VARCHAR(300), 
	info VARCHAR(1000), 
	deleted_at TIMESTAMP WITHOUT TIME ZONE, 
	paused BOOLEAN DEFAULT false NOT NULL, 
	name_key VARCHAR(400), 
	ip_address VARCHAR(64), 
	PRIMARY KEY (id), 
	UNIQUE (name), 
	FOREIGN KEY(owner_id) REFERENCES users (id)
);

CREATE INDEX ix_workers_last_pop_at ON workers (last_pop_at);
CREATE UNIQUE INDEX ix_workers_name_key ON workers (name_key);
CREATE INDEX ix_workers_owner_id ON workers (owner_id);
CREATE INDEX ix_workers_text_pop_at ON workers (text_pop_at);

CREATE TABLE batch_lines (
	batch_id VARCHAR(40) NOT NULL, 
	line INTEGER NOT NULL, 
	custom_id VARCHAR(512) NOT NULL, 
	request_id VARCHAR(36) NOT NULL, 
	state VARCHAR(12) NOT NULL, 
	retry_at TIMESTAMP WITHOUT TIME ZONE, 
	withdrawn BOOLEAN NOT NULL, 
	body JSON, 
	output TEXT, 
	ok BOOLEAN, 
	finished_at TIMESTAMP WITHOUT TIME ZONE, 
	PRIMARY KEY (batch_id, line), 
	FOREIGN KEY(batch_id) REFERENCES batches (id) ON DELETE CASCADE
);

CREATE INDEX ix_batch_lines_output ON batch_lines (batch_id, ok, line);
CREATE INDEX ix_batch_lines_queued ON batch_lines (batch_id, line) WHERE state = 'queued';

CREATE TABLE chat_jobs (
	id VARCHAR(36) NOT NULL, 
	request_id VARCHAR(36) NOT NULL, 
	worker_id VARCHAR(36) NOT NULL, 
	model VARCHAR(200) NOT NULL, 
	state VARCHAR(16) NOT NULL, 
	started_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
	deadline_at TIMESTAMP WITHOUT TIME ZONE NOT NULL, 
	ended_at TIMESTAMP WITHOUT TIME ZONE, 
	reason TEXT, 
	PRIMARY KEY (id), 
	FOREIGN KEY(request_id) REFERENCES chat_requests (id) ON DELETE CASCADE, 
	FOREIGN KEY(worker_id) REFERENCES workers (id)
);

CREATE INDEX ix_chat_jobs_request_id ON chat_jobs (request_id);
CREATE INDEX ix_chat_jobs_state_deadline ON chat_jobs (state, deadline_at);
CREATE INDEX ix_chat_jobs_state_ended ON chat_jobs (state, ended_at);
CREATE INDEX ix_chat_jobs_worker_state ON chat_jobs (worker_id, state);

CREATE TABLE chat_request_models (
	request_id VARCHAR(36) NOT NULL, 
	model VARCHAR(200) NOT NULL, 
	priority_class INTEGER DEFAULT 1 NOT NULL, 
	priority INTEGER DEFAULT 0 NOT NULL, 
	created_at TIMESTAMP WITHOUT TIME ZONE, 
	PRIMARY KEY (request_id, model), 
	FOREIGN KEY(request_id) REFERENCES chat_requests (id) ON DELETE CASCADE
);

CREATE INDEX ix_chat_request_models_queue ON chat_request_models (model, priority_class, priority DESC, created_at, request_id);

CREATE TABLE file_chunks (
	file_id VARCHAR(40) NOT NULL, 
	seq INTEGER NOT NULL, 
	data BYTEA NOT NULL, 
	PRIMARY KEY (file_id, seq), 
	FOREIGN KEY(file_id) REFERENCES files (id) ON DELETE CASCADE
);


CREATE TABLE text_jobs (
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
	cached_tokens INTEGER NOT NULL, 
	kudos INTEGER NOT NULL, 
	finish_reason VARCHAR(16), 
	reason TEXT, 
	PRIMARY KEY (id), 
	FOREIGN KEY(request_id) REFERENCES text_requests (id) ON DELETE CASCADE, 
	FOREIGN KEY(worker_id) REFERENCES workers (id)
);

CREATE INDEX ix_text_jobs_request_id ON text_jobs (request_id);
CREATE INDEX ix_text_jobs_state_deadline ON text_jobs (state, deadline_at);
CREATE INDEX ix_text_jobs_submitted_ended ON text_jobs (state, ended_at) WHERE state = 'submitted';
CREATE INDEX ix_text_jobs_worker_state_ended ON text_jobs (worker_id, state, ended_at);

CREATE TABLE text_request_models (
	request_id VARCHAR(36) NOT NULL, 
	model VARCHAR(200) NOT NULL, 
	priority_class INTEGER DEFAULT 1 NOT NULL, 
	priority INTEGER DEFAULT 0 NOT NULL, 
	created_at TIMESTAMP WITHOUT TIME ZONE, 
	PRIMARY KEY (request_id, model), 
	FOREIGN KEY(request_id) REFERENCES text_requests (id) ON DELETE CASCADE
);

CREATE INDEX ix_text_request_models_queue ON text_request_models (model, priority_class, priority DESC, created_at, request_id);

CREATE OR REPLACE FUNCTION horde_rate_turn(
    lock_class integer, lock_id integer, caller integer, address varchar, since_second bigint
) RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(lock_class, lock_id);
    RETURN (SELECT coalesce(sum(admitted), 0) FROM rate_counts
            WHERE user_id = caller AND client_address = address AND epoch_second >= since_second);
END
$$;

CREATE OR REPLACE FUNCTION horde_chat_in_flight(
    lock_class integer, lock_id integer, caller integer
) RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(lock_class, lock_id);
    RETURN (SELECT count(*) FROM chat_requests WHERE user_id = caller AND state IN ('waiting', 'processing') AND NOT batch_line);
END
$$;

CREATE OR REPLACE FUNCTION horde_text_in_flight(
    lock_class integer, lock_id integer, caller integer
) RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(lock_class, lock_id);
    RETURN (SELECT coalesce(sum(waiting + processing), 0) FROM text_requests WHERE user_id = caller AND state IN ('waiting', 'processing') AND NOT batch_line);
END
$$;

CREATE OR REPLACE FUNCTION horde_audit_append_only()
RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the audit trail is append-only: an entry is never changed nor deleted';
END
$$;

CREATE OR REPLACE TRIGGER audit_entries_append_only BEFORE UPDATE OR DELETE ON audit_entries FOR EACH ROW EXECUTE FUNCTION horde_audit_append_only();

CREATE OR REPLACE FUNCTION horde_text_request_ended()
RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM text_request_models WHERE (request_id, model) IN (
        SELECT request_id, model FROM text_request_models WHERE request_id = NEW.id FOR UPDATE SKIP LOCKED
    );
    RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER text_requests_ended AFTER UPDATE OF state ON text_requests FOR EACH ROW WHEN (NEW.state IN ('done', 'faulted', 'cancelled') AND OLD.state NOT IN ('done', 'faulted', 'cancelled')) EXECUTE FUNCTION horde_text_request_ended();

