"""Serving HTTP/1.1 on gevent: one strict connection loop for `python -m horde serve` and gunicorn's HordeWorker.

h11 (python-hyper's sans-IO HTTP/1.1 parser) reads every request; `framing` adds the rules of RFC 9112 it
leaves to its user; `connection` drives it over a socket and runs the WSGI app; `registry` bounds a process's
connections and sheds the idlest and slowest at the cap (docs/decisions/0027-strict-http-framing.md).
`server` is `python -m horde serve`'s process, `gunicorn` the worker class of the production command, `heap`
the collector's settings for serving. It imports no domain: the housekeeping is handed to it.
"""
