"""The queue by model: each request's model rows carry its place in the queue, so that a pop, a position and a
count read the requests of the models they ask about, never those of models nobody serves (decision 0043)."""
