"""What an operator runs around the API: the /health, /ready and /metrics routes, CORS, the database gauges,
and the process's housekeeping (the sweeper of every domain). Above the domains it reads."""
