"""A request's conversation: the key that ties a conversation's turns together, scoped to its user.

A client names its conversation (the native `conversation_key`; the dialects map `prompt_cache_key`, a session
id and Claude Code's session onto it, horde/oai/conversation.py). A client that names none still gets one: the
hash of what a conversation's turns share and resend unchanged, its leading system messages, its tools and its
first user message. Either way the key is hashed with the user's id, so one user's key never matches another
user's, and only the hash is stored (chat_requests.conversation_key) and given to the worker.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from horde.cooperative import pause_every

#: The longest conversation key a client may send (native `conversation_key`, `prompt_cache_key`, session ids;
#: OpenAI documents no limit for prompt_cache_key, Codex sends a 36-character session id).
CONVERSATION_KEY_MAX_CHARS = 1024
#: The stored key: hex of a SHA-256 of the user's id and the client's key, cut to 128 bits.
STORED_KEY_CHARS = 32
#: The native field, and the worker payload's key that carries the stored (hashed) key to the worker.
FIELD = "conversation_key"


def scoped(user_id: int, key: str) -> str:
    """The stored key of the client key `key` for the user `user_id`."""
    digest = hashlib.sha256(f"{user_id}\x00{key}".encode("utf-8", errors="surrogatepass")).hexdigest()
    return digest[:STORED_KEY_CHARS]


def leading_messages_key(messages: list[dict], tools: Any) -> str:
    """What every turn of a conversation resends unchanged: its leading system messages, its tools and its first
    user message, as one digest (a keyless client's conversation key)."""
    leading: list[Any] = []
    for message in pause_every(messages):
        leading.append(message)
        if message.get("role") == "user":
            break
    canonical = json.dumps([leading, tools or []], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "messages:" + hashlib.sha256(canonical.encode("utf-8", errors="surrogatepass")).hexdigest()


def of_request(user_id: int, native: dict, inherited: str | None = None) -> str:
    """The stored key of a validated native request: its own `conversation_key`, else `inherited` (a stored key a
    dialect found, e.g. the previous response's), else the digest of its leading messages."""
    if native.get(FIELD):
        return scoped(user_id, native[FIELD])
    if inherited:
        return inherited
    return scoped(user_id, leading_messages_key(native["messages"], native.get("tools")))
