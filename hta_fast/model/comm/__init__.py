"""Collectives: links across ranks, their bytes per kernel, fitted cost models."""
