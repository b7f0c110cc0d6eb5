"""The bytes of a collective and its bus bandwidth factor, as nccl-tests counts them.

Size: the larger of the collective's input and output buffers, in bytes (elements x the
dtype's size): the gathered output of an all-gather, the input of a reduce-scatter, the one
buffer of an all-reduce, all-to-all, broadcast, send or recv. The dtype is the arguments'
(record_param_comms), else the one the NCCL kernel's name ends with.

Bus bandwidth = algorithm bandwidth (size / time) x the fraction of the data each rank must
put on the wire: 2(n-1)/n for all-reduce; (n-1)/n for all-gather, reduce-scatter and
all-to-all; 1 otherwise.
"""

from __future__ import annotations

import re
from typing import Optional, Sequence

import numpy as np

from . import dtypes
from .op_call import NoModel, OpCall

# Collective names as PyTorch (record_param_comms) and NCCL/RCCL kernels spell them, reduced
# to letters; the first pattern found wins, so "reducescatter" is tried before "reduce".
_COLLECTIVES = (
    ("allreduce", "all_reduce"),
    ("allgather", "all_gather"),
    ("reducescatter", "reduce_scatter"),
    ("alltoall", "all_to_all"),
    ("broadcast", "broadcast"),
    ("sendrecv", "send_recv"),
    ("barrier", "barrier"),
    ("reduce", "reduce"),
    ("send", "send"),
    ("recv", "recv"),
)
# The collectives whose bus traffic is (n-1)/n of the data; all-reduce moves twice that.
_SPREAD = ("all_gather", "reduce_scatter", "all_to_all")


def collective_of(name: Optional[str]) -> str:
    """all_reduce, all_gather, ... from a collective or kernel name; "other" if none fits."""
    letters = re.sub(r"[^a-z]", "", (name or "").lower())
    for pattern, collective in _COLLECTIVES:
        if pattern in letters:
            return collective
    return "other"


def bus_factor(collective: str, n: int) -> float:
    """nccl-tests' bus bandwidth factor for a collective over n ranks: all-reduce 2(n-1)/n;
    all-gather, reduce-scatter, all-to-all (n-1)/n; 1.0 otherwise (broadcast, reduce,
    send/recv, unknown kernels) and for groups of one. The name may be a collective kind
    ("all_reduce"), a torch name ("_allgather_base") or an NCCL one ("AllReduce")."""
    if n <= 1:
        return 1.0
    kind = collective_of(collective)
    if kind == "all_reduce":
        return 2.0 * (n - 1) / n
    return (n - 1) / n if kind in _SPREAD else 1.0


def dtype_of_kernel(name: str) -> Optional[str]:
    """The element type an NCCL kernel's name carries, as it spells it: the last part of
    ncclKernel_AllReduce_RING_LL_Sum_float ("float", "int8_t"), or the type code among the
    parts of ncclDevKernel_AllReduce_Sum_f32_RING_LL ("f32"). None when it names none."""
    parts = name.split("(", 1)[0].lower().split("_")[1:]
    for i in range(len(parts) - 1, -1, -1):
        part = parts[i]
        if part == "t" and i > 0:  # int8_t, uint64_t: the type is the last two parts
            part = f"{parts[i - 1]}_t"
        if dtypes.itemsize(part) is not None:
            return part
    return None


def message_bytes(
    in_elems: np.ndarray, out_elems: np.ndarray, dtype: Sequence[Optional[str]]
) -> np.ndarray:
    """The size in bytes of each collective (float64), from its input and output element
    counts (-1: not recorded) and its dtype spelling; NaN where the dtype is unknown or
    neither count is recorded."""
    elems = np.maximum(np.asarray(in_elems, np.int64), np.asarray(out_elems, np.int64))
    sizes = {d: dtypes.itemsize(d) for d in set(dtype)}
    size = np.array([sizes[d] or np.nan for d in dtype], np.float64)
    return np.where(elems >= 0, elems * size, np.nan)


def collective_dtype(arg_dtype: Optional[str], kernel_name: Optional[str]) -> Optional[str]:
    """A collective's dtype: its arguments' spelling, else its kernel name's."""
    return arg_dtype or (dtype_of_kernel(kernel_name) if kernel_name else None)


def input_dims_size(
    dims_text: Optional[str], types_text: Optional[str]
) -> Optional[tuple[int, str]]:
    """(elements, dtype) of the input tensors a CPU op recorded (its raw `Input Dims` and
    `Input type` JSON text: [[394241]], ["float"]), summed over every input that is a tensor
    of a known dtype (a coalesced call lists several); None when none is, or when their
    dtypes differ (one element count could not say the bytes)."""
    try:
        call = OpCall.parse("", dims_text, types_text, None)
    except NoModel:
        return None
    tensors = call.tensor_inputs()
    if not tensors or len({dtypes.canonical(call.dtype(i)) for i in tensors}) != 1:
        return None
    return sum(call.numel(i) for i in tensors), call.dtype(tensors[0])
