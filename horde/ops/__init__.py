"""What operators and browsers need around the API: CORS, request logs, metrics, graceful shutdown."""
