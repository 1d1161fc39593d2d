-- The queue by model (decision 0043): each request's model rows carry its place in the queue (priority class,
-- priority, arrival), copied from the request, with an index by model and place, so that a pop walks the
-- requests of its worker's models only, whatever waits for models nobody serves. A text request of any model
-- gets one model row of the model '' (text's ANY_MODEL), and an ended text request's model rows are dropped by
-- a trigger on its state (a row a pop holds at that moment goes with the next sweep; chat's are dropped by the
-- submit that ends it and by the sweeper already).
--
-- The UPDATE writes every model row of a live request once; rows of ended text requests are deleted. CREATE
-- INDEX holds off the tables' writes while it builds: on a busy Horde, build the two indexes first with CREATE
-- INDEX CONCURRENTLY (outside a transaction), then apply this file, which finds them. The trigger's function is
-- replaced by every start.
--
-- Idempotent: applying it to a database created from the current 0001_schema.sql leaves its schema as it was.
-- One transaction: all or nothing.

BEGIN;

ALTER TABLE chat_request_models ADD COLUMN IF NOT EXISTS priority_class INTEGER NOT NULL DEFAULT 1;
ALTER TABLE chat_request_models ADD COLUMN IF NOT EXISTS priority INTEGER NOT NULL DEFAULT 0;
ALTER TABLE chat_request_models ADD COLUMN IF NOT EXISTS created_at TIMESTAMP WITHOUT TIME ZONE;
ALTER TABLE text_request_models ADD COLUMN IF NOT EXISTS priority_class INTEGER NOT NULL DEFAULT 1;
ALTER TABLE text_request_models ADD COLUMN IF NOT EXISTS priority INTEGER NOT NULL DEFAULT 0;
ALTER TABLE text_request_models ADD COLUMN IF NOT EXISTS created_at TIMESTAMP WITHOUT TIME ZONE;

DELETE FROM text_request_models AS m USING text_requests AS r
    WHERE r.id = m.request_id AND r.state IN ('done', 'faulted', 'cancelled');
INSERT INTO text_request_models (request_id, model)
    SELECT r.id, '' FROM text_requests AS r
    WHERE r.state IN ('waiting', 'processing')
        AND NOT EXISTS (SELECT 1 FROM text_request_models AS m WHERE m.request_id = r.id);
UPDATE chat_request_models AS m
    SET priority_class = r.priority_class, priority = r.priority, created_at = r.created_at
    FROM chat_requests AS r
    WHERE r.id = m.request_id AND m.created_at IS NULL;
UPDATE text_request_models AS m
    SET priority_class = r.priority_class, priority = r.priority, created_at = r.created_at
    FROM text_requests AS r
    WHERE r.id = m.request_id AND m.created_at IS NULL;

CREATE INDEX IF NOT EXISTS ix_chat_request_models_queue
    ON chat_request_models (model, priority_class, priority DESC, created_at, request_id);
CREATE INDEX IF NOT EXISTS ix_text_request_models_queue
    ON text_request_models (model, priority_class, priority DESC, created_at, request_id);
DROP INDEX IF EXISTS ix_chat_request_models_model;
DROP INDEX IF EXISTS ix_text_request_models_model;

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

COMMIT;
