-- The rate budget sums each caller's admissions by the second (docs/decisions/0022-rate-counted-by-the-second.md):
-- the rate_counts table, and horde_rate_turn reading it in place of counting the caller's requests. The old
-- function (its arguments ended with a timestamp, then the address) is dropped.
--
-- Admissions made before the upgrade are not in rate_counts: for the first minute after it, each caller's
-- budget counts only the admissions made since.
--
-- Idempotent (IF NOT EXISTS, IF EXISTS, CREATE OR REPLACE): applying it to a database created from the current
-- 0001_schema.sql leaves its schema as it was. One transaction: all or nothing.

BEGIN;

CREATE TABLE IF NOT EXISTS rate_counts (
	user_id INTEGER NOT NULL,
	client_address VARCHAR(64) NOT NULL,
	epoch_second BIGINT NOT NULL,
	admitted INTEGER NOT NULL,
	PRIMARY KEY (user_id, client_address, epoch_second)
);

DROP FUNCTION IF EXISTS horde_rate_turn(integer, integer, integer, timestamp without time zone, varchar);

CREATE OR REPLACE FUNCTION horde_rate_turn(
    lock_class integer, lock_id integer, caller integer, address varchar, since_second bigint
) RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(lock_class, lock_id);
    RETURN (SELECT coalesce(sum(admitted), 0) FROM rate_counts
            WHERE user_id = caller AND client_address = address AND epoch_second >= since_second);
END
$$;

COMMIT;
