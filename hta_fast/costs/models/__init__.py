"""The per-family FLOPs/bytes models; each module registers its models on import."""
