-- A request keeps the usage multiplier its requester had when it was admitted (it pays the price times it; its
-- worker's owner earns the price), and each kind of request has a partial index of a user's requests waiting or
-- running, which admission counts against the user's concurrency in the INSERT that writes the request, by a
-- function that takes the user's turn first (horde_chat_in_flight, horde_text_in_flight), so that admissions of
-- one user at once are counted one after the other.
--
-- CREATE INDEX on a large table holds off its writes while it builds: on a busy Horde, build the two indexes first
-- with CREATE INDEX CONCURRENTLY (outside a transaction), then apply this file, which finds them.
--
-- Idempotent: applying it to a database created from the current 0001_schema.sql leaves its schema as it was.
-- One transaction: all or nothing.

BEGIN;

ALTER TABLE chat_requests ADD COLUMN IF NOT EXISTS usage_multiplier FLOAT NOT NULL DEFAULT 1.0;
ALTER TABLE text_requests ADD COLUMN IF NOT EXISTS usage_multiplier FLOAT NOT NULL DEFAULT 1.0;
CREATE INDEX IF NOT EXISTS ix_chat_requests_in_flight ON chat_requests (user_id) WHERE state IN ('waiting', 'processing');
CREATE INDEX IF NOT EXISTS ix_text_requests_in_flight ON text_requests (user_id) WHERE state IN ('waiting', 'processing');

CREATE OR REPLACE FUNCTION horde_chat_in_flight(
    lock_class integer, lock_id integer, caller integer
) RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(lock_class, lock_id);
    RETURN (SELECT count(*) FROM chat_requests WHERE user_id = caller AND state IN ('waiting', 'processing'));
END
$$;

CREATE OR REPLACE FUNCTION horde_text_in_flight(
    lock_class integer, lock_id integer, caller integer
) RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(lock_class, lock_id);
    RETURN (SELECT coalesce(sum(waiting + processing), 0) FROM text_requests WHERE user_id = caller AND state IN ('waiting', 'processing'));
END
$$;

COMMIT;
