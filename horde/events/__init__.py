"""Events: the in-process bus (bus.py), the Redis bus built on it (redis_bus.py), and the drain that ends the
waits on SIGTERM (drain.py). Below every domain; it imports no domain."""
