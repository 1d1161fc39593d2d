"""Storage: the database and its sessions, precompiled statements, the PostgreSQL cursor and hub wait, SQLite's
checkpoints, settling a write, and coalesced writes. Below every domain; it imports no domain."""
