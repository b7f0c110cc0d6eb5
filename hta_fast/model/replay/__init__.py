"""Replay of the dependency graph: one rank's steps, and all ranks together."""
