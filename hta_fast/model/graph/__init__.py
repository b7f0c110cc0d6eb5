"""The dependency graph of a rank's events and the one walk over its steps (as one chain, or
window by window)."""
