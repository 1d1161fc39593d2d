"""What the process tells its operator: metrics, the request log, the request's record (what a route notes for
the log) and the observer that writes them around every request."""
