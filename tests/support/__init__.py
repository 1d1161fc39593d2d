"""Test support: databases, real server and worker processes."""
