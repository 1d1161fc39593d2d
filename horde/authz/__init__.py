"""Who may change what: one table of actions × roles × key kinds (rules.py) and the one check every route calls."""
