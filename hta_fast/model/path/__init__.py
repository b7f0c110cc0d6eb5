"""The critical path: per rank, across ranks, and as a trace to open in Perfetto."""
