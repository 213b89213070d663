"""Runnable scenes: each is a small function building a ``newton.ModelBuilder`` (copy them freely)."""
