"""The per-family FLOPs/bytes models; each module registers its models on import, so
importing this package registers them all (costs.flops does, to apply them)."""

from . import (
    attention,
    conv,
    einsum,
    embedding,
    fbgemm,
    fbgemm_sparse,
    matmul,
    moe,
    norm,
    pointwise,
    triton,
    upsample,
)

__all__ = [
    "attention",
    "conv",
    "einsum",
    "embedding",
    "fbgemm",
    "fbgemm_sparse",
    "matmul",
    "moe",
    "norm",
    "pointwise",
    "triton",
    "upsample",
]
