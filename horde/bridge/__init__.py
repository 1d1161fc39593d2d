"""The reference worker (bridge): pops chat jobs from a Horde and runs them on a backend.

`python -m horde worker ...` calls `horde.bridge.cli.main`. The bridge speaks only the
native HTTP protocol (docs/reference/chat_requests.md), never the server's Python code,
so it runs the same against a local Horde or a remote one.
"""

BRIDGE_AGENT_NAME = "horde-reference-worker"
BRIDGE_AGENT_VERSION = 1
BRIDGE_AGENT_URL = "https://github.com/Haidra-Org/AI-Horde"
#: `name:version:url`, as the pop's `bridge_agent` wants it.
BRIDGE_AGENT = f"{BRIDGE_AGENT_NAME}:{BRIDGE_AGENT_VERSION}:{BRIDGE_AGENT_URL}"
