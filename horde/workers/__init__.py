"""Worker registry, declarations, the online window and the worker routes."""
