"""The AI Horde's text generation API (the "kobold" API): requests, jobs, pricing and routes."""
