"""OpenAI's Responses API (POST /v1/responses), a dialect over the chat contract: see docs/reference/responses.md."""
