"""The worker's calls that reach both chat and text: the chat pop (it counts the worker's text jobs against its
threads), a submit or fault carrying the next pop, and their routes. Above chat and text, so neither workers
nor chat imports the other's pop."""
