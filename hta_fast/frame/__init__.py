"""Layer 3, frame: what every analysis hands back and takes in: Result, Selection, field
metadata (units) and the per-trace memo."""
