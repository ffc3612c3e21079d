"""Property checks for the example: deterministic, offline, seeded."""
