"""The AI Horde's user details (/find_user, /users), assembled from the accounts, the workers and the requests."""
