"""What moderators decide that every layer reads or writes: the Horde's modes, the addresses in timeout, the audit
trail of every moderator's and admin's action, and each process's view of the first two (view.py)."""
