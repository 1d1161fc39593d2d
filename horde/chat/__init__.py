"""The native chat contract: requests, requirements, eligibility, pricing, lifecycle."""
