"""Tracked migrations: the numbered steps of `sql/` a database has, recorded in it, and the ones it lacks.

`sql/NNNN_name.sql` is a step for PostgreSQL (idempotent, as every upgrade there always was);
`sql/sqlite/NNNN_name.sql`, when present, the same step for SQLite (its columns: SQLite creates missing tables from
the models, never missing columns). `python -m horde db upgrade` applies the steps a database lacks, each in a
transaction of its own with its record (`applied_migrations`: name, checksum, when); `python -m horde db status`
lists them; a server refuses to start on a database that lacks any (docs/reference/operations.md, "Migrations").
"""
