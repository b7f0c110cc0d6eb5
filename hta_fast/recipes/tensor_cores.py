"""Share of GEMM time spent in tensor-core kernels.

Which kernels are GEMMs and which use tensor cores: hta_fast.costs.tensor_cores (by name,
matched once per distinct name, not per event).
"""

from __future__ import annotations

from typing import Any, Union

import numpy as np

from .. import udf
from ..costs.tensor_cores import GEMM, TENSOR_CORE
from ..frame.result import Result
from ..trace import Trace
from ..traceset import TraceSet


@udf.metric(name="tensor_core_share")
def tensor_core_share(dur: np.ndarray, gemm: np.ndarray, tensor_core: np.ndarray) -> float:
    """Time of GEMM kernels that use tensor cores / time of all GEMM kernels (NaN: no GEMM)."""
    gemm_time = 0
    tc_time = 0
    for i in range(len(dur)):
        if gemm[i]:
            gemm_time += dur[i]
            if tensor_core[i]:
                tc_time += dur[i]
    return tc_time / gemm_time if gemm_time > 0 else np.nan


def gemm_tensor_core_share(
    traces: Union[Trace, TraceSet], by: Any = (), **selection: Any
) -> Result:
    """Per rank (and per `by` group): share of GEMM kernel time in tensor-core kernels."""
    return udf.apply(
        tensor_core_share,
        traces,
        by=by,
        kinds="kernels",
        flags={"gemm": GEMM, "tensor_core": TENSOR_CORE},
        **selection,
    )
