-- An admission's INSERT takes the caller's rate turn and counts the caller's requests itself, by calling
-- horde_rate_turn in its WHERE (docs/decisions/0016-rate-turn-in-the-insert.md): the function must exist
-- before a server of this version admits a request on the database.
--
-- Idempotent (CREATE OR REPLACE): applying it to a database created from the current 0001_schema.sql
-- leaves its schema as it was. One transaction: all or nothing.

BEGIN;

CREATE OR REPLACE FUNCTION horde_rate_turn(
    lock_class integer, lock_id integer, caller integer, since timestamp without time zone, address varchar
) RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(lock_class, lock_id);
    IF address IS NULL THEN
        RETURN (SELECT count(*) FROM chat_requests WHERE user_id = caller AND created_at >= since)
             + (SELECT count(*) FROM text_requests WHERE user_id = caller AND created_at >= since);
    END IF;
    RETURN (SELECT count(*) FROM chat_requests WHERE user_id = caller AND created_at >= since AND client_address = address)
             + (SELECT count(*) FROM text_requests WHERE user_id = caller AND created_at >= since AND client_address = address);
END
$$;

COMMIT;
