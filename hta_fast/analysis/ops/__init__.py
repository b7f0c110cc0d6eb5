"""The operator-level analyses: each operator's GPU kernels and their launch configurations
(op_kernels), operators grouped by name and shapes with their GPU time, FLOPs and bytes
(op_table), and each group against its GPU's roofline (roofline). Like every subpackage of
analysis/, nothing here imports from analysis/ itself: the registry there imports it."""

from ..._lazy import lazy_package

__all__ = ["op_kernels", "op_table", "roofline"]

lazy_package(__name__, {}, subpackages=True)
