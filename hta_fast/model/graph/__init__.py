"""The dependency graph of a rank's events and the walks over its steps (chains, windows)."""
