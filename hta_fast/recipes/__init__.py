"""Recipes: real metrics written as hta_fast.udf metrics, ready to use and to copy.

    sm_occupancy.occupancy_per_step     time-weighted SM occupancy per profiler step (the
                                        achieved_occupancy analysis's per-step numbers)
    tensor_cores.gemm_tensor_core_share share of GEMM time spent in tensor-core kernels
    utilisation.utilisation_curve       GPU utilisation per time bucket, and its rolling mean

Most are a short function over columns (the metric) plus the call that runs it; the
cookbook (docs/cookbook.md) walks through them.
"""

from .sm_occupancy import occupancy_per_step
from .tensor_cores import gemm_tensor_core_share
from .utilisation import utilisation_curve

__all__ = ["occupancy_per_step", "gemm_tensor_core_share", "utilisation_curve"]
