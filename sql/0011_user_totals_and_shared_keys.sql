-- The AI Horde's accounts API (docs/reference/accounts.md): the users' running totals that its user details show
-- (kudos_details by ledger kind, records of generations and tokens), kept by the statement that moves each balance;
-- shared keys; and the requests paid with one, whose open estimates the key holds.
--
-- The totals of existing users are worked out once, when their columns are added: the kudos by kind and the
-- generations from the ledger (exact), the tokens from the text jobs submitted and the chat replies' billed usage
-- (a stream cancelled after some text was charged for it, and has no reply: its tokens are not counted).
--
-- Idempotent: applying it to a database created from the current 0001_schema.sql leaves its schema and rows as they
-- were. One transaction: all or nothing.

BEGIN;

DO $$
BEGIN
    IF NOT EXISTS (
        SELECT 1 FROM information_schema.columns
        WHERE table_schema = current_schema() AND table_name = 'users' AND column_name = 'kudos_accumulated'
    ) THEN
        ALTER TABLE users
            ADD COLUMN kudos_accumulated INTEGER NOT NULL DEFAULT 0,
            ADD COLUMN kudos_gifted INTEGER NOT NULL DEFAULT 0,
            ADD COLUMN kudos_received INTEGER NOT NULL DEFAULT 0,
            ADD COLUMN kudos_admin INTEGER NOT NULL DEFAULT 0,
            ADD COLUMN requested_generations INTEGER NOT NULL DEFAULT 0,
            ADD COLUMN requested_tokens BIGINT NOT NULL DEFAULT 0,
            ADD COLUMN fulfilled_generations INTEGER NOT NULL DEFAULT 0,
            ADD COLUMN fulfilled_tokens BIGINT NOT NULL DEFAULT 0;
        UPDATE users SET
            kudos_accumulated = entries.accumulated,
            kudos_gifted = entries.gifted,
            kudos_received = entries.received,
            kudos_admin = entries.admin,
            requested_generations = entries.charges,
            fulfilled_generations = entries.rewards
        FROM (
            SELECT user_id,
                   coalesce(sum(amount) FILTER (WHERE kind IN ('charge', 'reward')), 0) AS accumulated,
                   coalesce(sum(amount) FILTER (WHERE kind = 'gifted'), 0) AS gifted,
                   coalesce(sum(amount) FILTER (WHERE kind = 'received'), 0) AS received,
                   coalesce(sum(amount) FILTER (WHERE kind IN ('grant', 'adjustment')), 0) AS admin,
                   count(*) FILTER (WHERE kind = 'charge') AS charges,
                   count(*) FILTER (WHERE kind = 'reward') AS rewards
            FROM kudos_ledger GROUP BY user_id
        ) AS entries
        WHERE users.id = entries.user_id;

        WITH served AS (
            SELECT text_requests.user_id AS requester, workers.owner_id AS owner, text_jobs.tokens AS tokens
            FROM text_jobs
            JOIN text_requests ON text_requests.id = text_jobs.request_id
            JOIN workers ON workers.id = text_jobs.worker_id
            WHERE text_jobs.state = 'submitted'
            UNION ALL
            SELECT chat_requests.user_id, workers.owner_id,
                   CASE WHEN json_typeof(chat_requests.reply -> 'usage' -> 'completion_tokens') = 'number'
                        THEN (chat_requests.reply -> 'usage' ->> 'completion_tokens')::numeric::bigint ELSE 0 END
            FROM chat_requests
            JOIN workers ON workers.id = chat_requests.worker_id
            WHERE chat_requests.state = 'done'
        ),
        requested AS (SELECT requester AS user_id, sum(tokens) AS tokens FROM served GROUP BY requester),
        fulfilled AS (SELECT owner AS user_id, sum(tokens) AS tokens FROM served GROUP BY owner)
        UPDATE users SET
            requested_tokens = coalesce((SELECT tokens FROM requested WHERE requested.user_id = users.id), 0),
            fulfilled_tokens = coalesce((SELECT tokens FROM fulfilled WHERE fulfilled.user_id = users.id), 0);
    END IF;
END
$$;

CREATE TABLE IF NOT EXISTS shared_keys (
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
CREATE INDEX IF NOT EXISTS ix_shared_keys_user_id ON shared_keys (user_id);

-- A request names the shared key that pays for it (none for most: the partial indexes hold no entry for those).
ALTER TABLE chat_requests ADD COLUMN IF NOT EXISTS shared_key_id VARCHAR(36);
CREATE INDEX IF NOT EXISTS ix_chat_requests_shared_key ON chat_requests (shared_key_id, state)
    WHERE shared_key_id IS NOT NULL;
ALTER TABLE text_requests ADD COLUMN IF NOT EXISTS shared_key_id VARCHAR(36);
CREATE INDEX IF NOT EXISTS ix_text_requests_shared_key ON text_requests (shared_key_id, state)
    WHERE shared_key_id IS NOT NULL;

COMMIT;
