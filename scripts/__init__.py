"""Operational scripts: load, benchmark and soak runs (run from a checkout)."""
