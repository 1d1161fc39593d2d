"""Files: what a user uploads for the Batch API (`POST /v1/files`) and what a batch writes back, kept in the database
or in a directory (HORDE_FILES_DIR), read and written in chunks: never whole in memory (docs/reference/batches.md).

`models` holds the tables, `store` the two places a file's bytes live, `upload` a multipart upload streamed into
one while it is counted and checked, `service` what the routes do (create, list, read, delete, the user's store and
its bound), `lines` the lines of a file read from a byte offset on.
"""
