"""The account console's JSON (issue 46): a user's ledger with its running balance, its balance and usage by day,
its workers, and the Status page's series by minute. Reads only, over the accounts, the stats and the registry;
every read of a user's account is the user's own or a moderator's (authorization table, VIEW_ACCOUNT)."""
