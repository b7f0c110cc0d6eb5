"""Which runtime calls wait, and on what: the names behind the dependency graph's sync edges.

Kind numbers are the core's SyncKind (csrc/graph/dependency_graph.h)."""

from __future__ import annotations

import re

import numpy as np

NONE, STREAM, EVENT, DEVICE, OWN_COPY, STREAM_WAIT = range(6)

# CUDA runtime/driver and HIP spellings. cudaEventQuery and friends do not block, so they are
# absent; cudaMemcpy without Async blocks the host until its copy is done, and so does HIP's
# hipMemcpyWithStream (a copy on a given stream that returns when it is done: FLUX under
# xDiT waits 600 ms of its 742 ms step in one).
_PATTERNS = [
    (STREAM, re.compile(r"^(cuda|hip|cu)StreamSynchronize")),
    (EVENT, re.compile(r"^(cuda|hip|cu)EventSynchronize")),
    (
        DEVICE,
        re.compile(
            r"^(cudaDeviceSynchronize|hipDeviceSynchronize|cuCtxSynchronize|"
            r"cudaThreadSynchronize)"
        ),
    ),
    (
        OWN_COPY,
        re.compile(
            r"^(cuda|hip)Memcpy(?!.*Async)(2D|3D|ToSymbol|FromSymbol|WithStream|[DH]to[DH])?$"
            r"|^cuMemcpy[DH]to[DH](_v2)?$"
        ),
    ),
    (STREAM_WAIT, re.compile(r"^(cuda|hip|cu)StreamWaitEvent")),
]


# cudaEventRecord and friends: what an event sync or a stream wait without its cuda_sync row
# is tied to (hta_fast.model.graph.runtime_waits).
RECORD = r"^(cuda|hip|cu)EventRecord"
_RECORD = re.compile(RECORD)


def is_record_of_names(names: list[str]) -> np.ndarray:
    """Whether each name is an event record call."""
    return np.array([bool(_RECORD.match(name)) for name in names], bool)


def sync_kind_of_names(names: list[str]) -> np.ndarray:
    """The SyncKind of each name (NONE for calls that do not wait)."""
    out = np.zeros(len(names), np.uint8)
    for i, name in enumerate(names):
        for kind, pattern in _PATTERNS:
            if pattern.match(name):
                out[i] = kind
                break
    return out
