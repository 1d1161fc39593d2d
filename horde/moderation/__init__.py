"""Moderation on the AI Horde's API: changing and deleting users, IP timeouts, the Horde's modes, kudos awards, and
the audit trail's reading; the routes and the operator's command line call the same services
(docs/reference/moderation.md)."""
