"""The Batch API's batches (`POST /v1/batches`): a JSONL file of requests run as queued flex requests, a bounded
number at a time, by a driver that any server process may run (docs/decisions/0035-a-batch-driver-in-the-database.md).

`models` holds the tables, `objects` OpenAI's Batch object, `service` what the routes do (create, read, list,
cancel), `validation` the input file's check, `runner` what the dialect does for one line (horde/oai/batch_lines.py
implements it), `feeding` and `collecting` a batch's lines going out as requests and coming back as output lines,
`ending` a cancelled or expired batch's wind-down and its output files, `driver` the leases and the loop.
"""
