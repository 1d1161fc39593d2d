"""Joining the Horde: registration (the API and the AI Horde's form), invites, the per-address count, and the
OpenID Connect sign-in (docs/reference/accounts.md#registration)."""
