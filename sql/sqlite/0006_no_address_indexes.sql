-- sql/0006_no_address_indexes.sql for SQLite (the same statements).

DROP INDEX IF EXISTS ix_chat_requests_address_created;
DROP INDEX IF EXISTS ix_text_requests_address_created;
