"""What a route reads: the request's body and JSON, its payload, its client's address and connection, the
runtime of the app in hand, and the Swagger models and contract words the routes declare."""
