"""Build a rendered plan: freshness, scheduling, the base OS, build-time settings."""
