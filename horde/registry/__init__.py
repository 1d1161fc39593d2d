"""The public registry across kinds of work: /workers, /status/models/{name}, /status/heartbeat."""
