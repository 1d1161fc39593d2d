"""Background requests: kept in the database so that any server process polls, streams or cancels them
(horde/background/models.py; docs/decisions/0031)."""
