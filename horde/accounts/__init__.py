"""Users, hashed API keys and the kudos ledger."""
