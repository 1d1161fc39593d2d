-- The queue by model on SQLite: the same columns, rows, index and trigger as sql/0045_queue_by_model.sql.
-- Applied once, by the tracked migrations.

ALTER TABLE chat_request_models ADD COLUMN priority_class INTEGER NOT NULL DEFAULT 1;
ALTER TABLE chat_request_models ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
ALTER TABLE chat_request_models ADD COLUMN created_at DATETIME;
ALTER TABLE text_request_models ADD COLUMN priority_class INTEGER NOT NULL DEFAULT 1;
ALTER TABLE text_request_models ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
ALTER TABLE text_request_models ADD COLUMN created_at DATETIME;

DELETE FROM text_request_models
    WHERE request_id IN (SELECT id FROM text_requests WHERE state IN ('done', 'faulted', 'cancelled'));
INSERT INTO text_request_models (request_id, model)
    SELECT r.id, '' FROM text_requests AS r
    WHERE r.state IN ('waiting', 'processing')
        AND NOT EXISTS (SELECT 1 FROM text_request_models AS m WHERE m.request_id = r.id);
UPDATE chat_request_models
    SET (priority_class, priority, created_at) =
        (SELECT r.priority_class, r.priority, r.created_at FROM chat_requests AS r WHERE r.id = request_id)
    WHERE created_at IS NULL;
UPDATE text_request_models
    SET (priority_class, priority, created_at) =
        (SELECT r.priority_class, r.priority, r.created_at FROM text_requests AS r WHERE r.id = request_id)
    WHERE created_at IS NULL;

CREATE INDEX IF NOT EXISTS ix_chat_request_models_queue
    ON chat_request_models (model, priority_class, priority DESC, created_at, request_id);
CREATE INDEX IF NOT EXISTS ix_text_request_models_queue
    ON text_request_models (model, priority_class, priority DESC, created_at, request_id);
DROP INDEX IF EXISTS ix_chat_request_models_model;
DROP INDEX IF EXISTS ix_text_request_models_model;

CREATE TRIGGER IF NOT EXISTS text_requests_ended AFTER UPDATE OF state ON text_requests FOR EACH ROW
WHEN NEW.state IN ('done', 'faulted', 'cancelled') AND OLD.state NOT IN ('done', 'faulted', 'cancelled')
BEGIN DELETE FROM text_request_models WHERE request_id = NEW.id; END;
