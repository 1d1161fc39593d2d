-- The Batch API (docs/reference/batches.md): the files a user uploads and a batch's output and error files (their
-- bytes as chunks in the database, or in HORDE_FILES_DIR), the batches, and their lines once fed.
--
-- New tables only: the server also creates missing tables on start.
--
-- Idempotent: applying it to a database created from the current 0001_schema.sql leaves its schema as it
-- was. One transaction: all or nothing.

BEGIN;

CREATE TABLE IF NOT EXISTS files (
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
CREATE TABLE IF NOT EXISTS file_chunks (
	file_id VARCHAR(40) NOT NULL, 
	seq INTEGER NOT NULL, 
	data BYTEA NOT NULL, 
	PRIMARY KEY (file_id, seq), 
	FOREIGN KEY(file_id) REFERENCES files (id) ON DELETE CASCADE
);
CREATE TABLE IF NOT EXISTS batches (
	id VARCHAR(40) NOT NULL, 
	user_id INTEGER NOT NULL, 
	shared_key_id VARCHAR(36), 
	endpoint VARCHAR(32) NOT NULL, 
	input_file_id VARCHAR(40) NOT NULL, 
	completion_window VARCHAR(8) NOT NULL, 
	metadata JSON, 
	output_expires_after_s INTEGER, 
	status VARCHAR(16) NOT NULL, 
	errors JSON, 
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
CREATE TABLE IF NOT EXISTS batch_lines (
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
CREATE INDEX IF NOT EXISTS ix_batches_status_lease ON batches (status, lease_until);
CREATE INDEX IF NOT EXISTS ix_batches_user_created ON batches (user_id, created_at, id);
CREATE INDEX IF NOT EXISTS ix_files_expires_at ON files (expires_at);
CREATE INDEX IF NOT EXISTS ix_files_user_created ON files (user_id, created_at, id);
CREATE INDEX IF NOT EXISTS ix_batch_lines_output ON batch_lines (batch_id, ok, line);
CREATE INDEX IF NOT EXISTS ix_batch_lines_queued ON batch_lines (batch_id, line) WHERE state = 'queued';

COMMIT;
