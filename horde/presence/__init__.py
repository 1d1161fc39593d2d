"""Which serving processes share the database, so that each knows how it hears the others: through Redis, by reading
the database every HORDE_EVENTS_POLL_S while another process shares it without Redis, or alone, by its own events
(hearing.py; docs/reference/operations.md, "How processes hear each other")."""
