"""Which runtime calls wait, and on what: the names behind the dependency graph's sync edges
and behind the trace generator's host waits (hta_fast.synth.variation).

Kind numbers are the core's SyncKind (csrc/graph/dependency_graph.h), read from `_core`."""

from __future__ import annotations

import re

import numpy as np

from . import _core
from .schema import EventKind
from .trace import Trace

_KIND = _core.graph.SyncKind
NONE, STREAM, EVENT, DEVICE, OWN_COPY, STREAM_WAIT = (
    int(_KIND.none),
    int(_KIND.stream),
    int(_KIND.event),
    int(_KIND.device),
    int(_KIND.own_copy),
    int(_KIND.stream_wait),
)

# CUDA runtime/driver and HIP spellings. cudaEventQuery and friends do not block, so they are
# absent; cudaMemcpy without Async blocks the host until its copy is done, and so do the
# driver's cuMemcpy and HIP's hipMemcpyWithStream (a copy on a given stream that returns when
# it is done: FLUX under xDiT waits 600 ms of its 742 ms step in one). Names from both eras of
# kineto: its own list (earlier traces), and since 2026 CUPTI's callback names with the
# `_vNNNN` version suffix cut (kineto cupti_strings.cpp lookupCbidName), which keeps `_v2` and
# the per-thread default-stream variants `_ptds` / `_ptsz` (cudaMemcpy_ptds,
# cuMemcpyDtoH_v2_ptds). A call that an earlier kineto wrote as INVALID or unknown has the
# later name from its cbid: the loader gives it (csrc/parse/cbid_names.h).
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
            r"^(cuda|hip)Memcpy(2D|3D|ToSymbol|FromSymbol|WithStream|[DH]to[DH])?"
            r"(_ptds)?$"
            r"|^cuMemcpy([DH]to[DH](_v2)?)?(_ptds)?$"
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


# The kinds that hold the host until GPU work is done (a stream wait holds a stream, not the host).
BLOCKING = (STREAM, EVENT, DEVICE, OWN_COPY)
# The names of those calls as one regular expression, for matchers that take a pattern (the
# doctor's name flags, matched for all ranks at once by Arrow's RE2: no lookaround in
# _PATTERNS).
BLOCKING_NAMES = "|".join(f"(?:{p.pattern})" for kind, p in _PATTERNS if kind in BLOCKING)
# The blocking calls that are copies (the host waits for its own copy), as one pattern.
COPY_NAMES = next(p.pattern for kind, p in _PATTERNS if kind == OWN_COPY)


def sync_kind_of_names(names: list[str]) -> np.ndarray:
    """The SyncKind of each name (NONE for calls that do not wait)."""
    out = np.zeros(len(names), np.uint8)
    for i, name in enumerate(names):
        for kind, pattern in _PATTERNS:
            if pattern.match(name):
                out[i] = kind
                break
    return out


# An asynchronous copy from or to pageable host memory (Kineto names its GPU side "Memcpy
# DtoH (Device -> Pageable)"): the driver stages it through pinned memory, and a copy to the
# host returns only once its data is there, a copy from it often only once staged, after
# the stream's earlier work. Either way the call holds the host until its copy is done.
_PAGEABLE = re.compile(r"Pageable")
_ASYNC_COPY = re.compile(r"^(cuda|hip)MemcpyAsync|^cuMemcpy([DH]to[DH])?Async")


def pageable_copies(
    call_names: list[str], copy_names: list[str], call_end: np.ndarray, copy_end: np.ndarray
) -> np.ndarray:
    """Which asynchronous copy calls block the host until their own copy is done (they wait
    as OWN_COPY): the call is an async memcpy, its copy touches pageable memory, and the
    copy ended by the time the call returned (a staged copy from the host that ran later
    did not hold the call, and is left asynchronous)."""
    return np.array(
        [
            bool(_ASYNC_COPY.match(c)) and bool(_PAGEABLE.search(g)) and ce >= ge
            for c, g, ce, ge in zip(call_names, copy_names, call_end.tolist(), copy_end.tolist())
        ],
        bool,
    )


def sync_kinds_of_rows(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """The SyncKind of each event row's name (NONE for calls that do not wait), each
    distinct name matched once."""
    ids, at = np.unique(trace.column("events", "name")[rows], return_inverse=True)
    # to_pylist, not fill_null: pyarrow's fill_null imports pandas where it is installed
    texts = [t or "" for t in trace.strings_at(ids).to_pylist()]
    return sync_kind_of_names(texts)[at.reshape(-1)]


def host_wait_rows(trace: Trace) -> np.ndarray:
    """Rows of the runtime and driver calls that held the host until GPU work was done: the
    BLOCKING kinds by name, and the asynchronous copies to or from pageable memory that
    returned once their copy was done (pageable_copies), in row order."""
    kind = trace.column("events", "kind")
    name = trace.column("events", "name")
    calls = np.flatnonzero(np.isin(kind, [EventKind.runtime, EventKind.driver]) & (name >= 0))
    if not len(calls):
        return calls
    waits = np.isin(sync_kinds_of_rows(trace, calls), BLOCKING)
    partner = trace.column("events", "partner")[calls]
    copy = np.flatnonzero(~waits & (partner >= 0))
    if len(copy):
        call, gpu = calls[copy], partner[copy]
        end = trace.column("events", "ts") + np.maximum(trace.column("events", "dur"), 0)
        names = [t or "" for t in trace.strings_at(name[call]).to_pylist()]
        gpu_names = [t or "" for t in trace.strings_at(name[gpu]).to_pylist()]
        waits[copy] = pageable_copies(names, gpu_names, end[call], end[gpu])
    return calls[waits]
