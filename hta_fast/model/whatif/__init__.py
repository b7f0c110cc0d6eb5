"""What-if edits replayed on the dependency graph."""
