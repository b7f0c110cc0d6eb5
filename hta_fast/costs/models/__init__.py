"""The per-family FLOPs/bytes models; each module registers its models on import, so
importing this package registers them all (costs.flops does, to apply them)."""

from . import attention, conv, embedding, fbgemm, fbgemm_sparse, matmul, norm, pointwise

__all__ = [
    "attention",
    "conv",
    "embedding",
    "fbgemm",
    "fbgemm_sparse",
    "matmul",
    "norm",
    "pointwise",
]
