-- sql/0011_user_totals_and_shared_keys.sql for SQLite: the users' running totals, filled from the ledger and the
-- served jobs, and the requests' shared key (a start creates the shared_keys table from the models).
-- The totals are filled only where they are all still 0: on a database that had them, they are what the
-- settlements wrote, and a user with no activity has 0 either way.

ALTER TABLE users ADD COLUMN kudos_accumulated INTEGER DEFAULT 0 NOT NULL;
ALTER TABLE users ADD COLUMN kudos_gifted INTEGER DEFAULT 0 NOT NULL;
ALTER TABLE users ADD COLUMN kudos_received INTEGER DEFAULT 0 NOT NULL;
ALTER TABLE users ADD COLUMN kudos_admin INTEGER DEFAULT 0 NOT NULL;
ALTER TABLE users ADD COLUMN requested_generations INTEGER DEFAULT 0 NOT NULL;
ALTER TABLE users ADD COLUMN requested_tokens BIGINT DEFAULT 0 NOT NULL;
ALTER TABLE users ADD COLUMN fulfilled_generations INTEGER DEFAULT 0 NOT NULL;
ALTER TABLE users ADD COLUMN fulfilled_tokens BIGINT DEFAULT 0 NOT NULL;

UPDATE users SET
    kudos_accumulated = coalesce((SELECT sum(amount) FROM kudos_ledger
                                  WHERE user_id = users.id AND kind IN ('charge', 'reward')), 0),
    kudos_gifted = coalesce((SELECT sum(amount) FROM kudos_ledger WHERE user_id = users.id AND kind = 'gifted'), 0),
    kudos_received = coalesce((SELECT sum(amount) FROM kudos_ledger
                               WHERE user_id = users.id AND kind = 'received'), 0),
    kudos_admin = coalesce((SELECT sum(amount) FROM kudos_ledger
                            WHERE user_id = users.id AND kind IN ('grant', 'adjustment')), 0),
    requested_generations = (SELECT count(*) FROM kudos_ledger WHERE user_id = users.id AND kind = 'charge'),
    fulfilled_generations = (SELECT count(*) FROM kudos_ledger WHERE user_id = users.id AND kind = 'reward')
WHERE kudos_accumulated = 0 AND kudos_gifted = 0 AND kudos_received = 0 AND kudos_admin = 0
    AND requested_generations = 0 AND fulfilled_generations = 0;

WITH served AS (
    SELECT text_requests.user_id AS requester, workers.owner_id AS owner, text_jobs.tokens AS tokens
    FROM text_jobs
    JOIN text_requests ON text_requests.id = text_jobs.request_id
    JOIN workers ON workers.id = text_jobs.worker_id
    WHERE text_jobs.state = 'submitted'
    UNION ALL
    SELECT chat_requests.user_id, workers.owner_id,
           CASE WHEN json_type(chat_requests.reply, '$.usage.completion_tokens') IN ('integer', 'real')
                THEN CAST(json_extract(chat_requests.reply, '$.usage.completion_tokens') AS INTEGER) ELSE 0 END
    FROM chat_requests
    JOIN workers ON workers.id = chat_requests.worker_id
    WHERE chat_requests.state = 'done'
)
UPDATE users SET
    requested_tokens = coalesce((SELECT sum(tokens) FROM served WHERE served.requester = users.id), 0),
    fulfilled_tokens = coalesce((SELECT sum(tokens) FROM served WHERE served.owner = users.id), 0)
WHERE requested_tokens = 0 AND fulfilled_tokens = 0;

ALTER TABLE chat_requests ADD COLUMN shared_key_id VARCHAR(36);
CREATE INDEX IF NOT EXISTS ix_chat_requests_shared_key ON chat_requests (shared_key_id, state)
    WHERE shared_key_id IS NOT NULL;
ALTER TABLE text_requests ADD COLUMN shared_key_id VARCHAR(36);
CREATE INDEX IF NOT EXISTS ix_text_requests_shared_key ON text_requests (shared_key_id, state)
    WHERE shared_key_id IS NOT NULL;
