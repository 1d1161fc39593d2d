-- The text roster reads only the online text workers: the text models any worker ever declared on a text pop stay
-- known in known_text_models (horde/text/known_models.py), as chat's do in known_models. Filled here from the
-- workers seen so far.
--
-- Idempotent: applying it to a database created from the current 0001_schema.sql leaves its schema as it
-- was. One transaction: all or nothing.

BEGIN;

CREATE TABLE IF NOT EXISTS known_text_models (
	name VARCHAR(200) NOT NULL,
	first_declared_at TIMESTAMP WITHOUT TIME ZONE NOT NULL,
	PRIMARY KEY (name)
);

INSERT INTO known_text_models (name, first_declared_at)
SELECT DISTINCT model.name, now() AT TIME ZONE 'UTC'
FROM workers,
    json_array_elements_text(CASE WHEN json_typeof(workers.text_models) = 'array' THEN workers.text_models END)
    AS model(name)
ON CONFLICT (name) DO NOTHING;

COMMIT;
