"""The publish stage: verified images -> registries, by digest (Verified -> Published)."""
