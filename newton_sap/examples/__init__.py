"""Runnable scenes: each is a small function that builds and returns a finalized ``newton.Model`` (copy them freely)."""
