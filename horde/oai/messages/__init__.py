"""Anthropic's Messages API (POST /v1/messages), a dialect over the chat contract: see docs/reference/messages.md."""
