"""Embedding lookups, their cost models, and sharding plans replayed."""
