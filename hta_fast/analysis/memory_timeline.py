"""GPU memory over time by category, from the raw timeline torch.profiler writes.

`torch.profiler.profile.export_memory_timeline("x.raw.json.gz")` writes a JSON list of
`[time_ns, action, bytes, category]`: `bytes` is signed (allocations positive, frees
negative; a category change is a pair of entries), `category` indexes CATEGORIES, and
tensors that existed before profiling have time -1. Those are placed at the first real
timestamp. The result holds the bytes of every category after all entries of each
distinct timestamp.
"""

from __future__ import annotations

import gzip
import json
import os
from typing import Any, Sequence, Union

import numpy as np
import pyarrow as pa

from .._arrow import array_of
from ..frame.fields import NS
from ..frame.result import Result

__all__ = ["memory_timeline"]

# Index order used by torch's memory profiler.
CATEGORIES = (
    "Parameter",
    "Optimizer state",
    "Input",
    "Temporary",
    "Activation",
    "Gradient",
    "Autograd",
    "Unknown",
)
COLUMNS = tuple(c.lower().replace(" ", "_") for c in CATEGORIES)
BYTES = {"unit": "B"}


def _read(source: Union[str, os.PathLike, bytes, Sequence]) -> Any:
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        return json.loads(data)
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        with open(path, "rb") as f:
            data = f.read()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        return json.loads(data)
    return list(source)


def raw_entries(source: Union[str, os.PathLike, bytes, Sequence]) -> np.ndarray:
    """The entries as an (n, 4) int64 array: time, action, bytes, category."""
    doc = _read(source)
    if not isinstance(doc, list):
        raise ValueError(
            "not a raw memory timeline: expected a JSON list of [time, action, bytes, category]"
        )
    if not doc:
        return np.zeros((0, 4), np.int64)
    try:
        arr = np.asarray(doc, dtype=np.int64)
    except (ValueError, TypeError, OverflowError) as e:
        raise ValueError(f"not a raw memory timeline: {e}") from None
    if arr.ndim != 2 or arr.shape[1] != 4:
        raise ValueError(
            "not a raw memory timeline: entries must be [time, action, bytes, category]"
        )
    return arr


def memory_timeline(source: Union[str, os.PathLike, bytes, Sequence]) -> Result:
    """Main table: time (ns), one column per category (bytes held: parameter,
    optimizer_state, input, temporary, activation, gradient, autograd, unknown) and total,
    one row per distinct timestamp, ascending. Side table "summary": per category its peak
    and final bytes; params["peak_time"]: when the total peaked."""
    arr = raw_entries(source)
    notes = []
    t, nbytes, cat = arr[:, 0].copy(), arr[:, 2], arr[:, 3].copy()
    bad = (cat < 0) | (cat >= len(CATEGORIES))
    if bad.any():
        notes.append(f"{int(bad.sum())} entries with an unknown category index counted as Unknown")
        cat[bad] = len(CATEGORIES) - 1
    positive = t[t > 0]
    first = int(positive.min()) if len(positive) else 0
    pre = t < 0
    if pre.any():
        t[pre] = first
        notes.append(
            f"{int(pre.sum())} allocations made before profiling placed at the first timestamp"
        )
    order = np.argsort(t, kind="stable")
    t, nbytes, cat = t[order], nbytes[order], cat[order]
    delta = np.zeros((len(t), len(CATEGORIES)), np.int64)
    delta[np.arange(len(t)), cat] = nbytes
    held = np.cumsum(delta, axis=0)
    last = np.ones(len(t), bool)
    last[:-1] = t[1:] != t[:-1]
    times, held = t[last], held[last]
    total = held.sum(axis=1)
    if (held < 0).any():
        notes.append(
            "some category goes below zero bytes: frees of memory allocated before "
            "the timeline began"
        )
    fields = [pa.field("time", pa.int64(), metadata=NS)]
    fields += [pa.field(c, pa.int64(), metadata=BYTES) for c in COLUMNS]
    fields.append(pa.field("total", pa.int64(), metadata=BYTES))
    table = pa.Table.from_arrays(
        [array_of(times)] + [array_of(held[:, i]) for i in range(len(COLUMNS))] + [array_of(total)],
        schema=pa.schema(fields),
    )
    if len(times):
        peak = held.max(axis=0)
        final = held[-1]
        peak_time = int(times[int(np.argmax(total))])
    else:
        peak = final = np.zeros(len(COLUMNS), np.int64)
        peak_time = None
    summary = pa.Table.from_arrays(
        [
            array_of(list(COLUMNS) + ["total"]),
            array_of(np.append(peak, total.max() if len(total) else 0)),
            array_of(np.append(final, total[-1] if len(total) else 0)),
        ],
        schema=pa.schema(
            [
                pa.field("category", pa.string()),
                pa.field("peak", pa.int64(), metadata=BYTES),
                pa.field("final", pa.int64(), metadata=BYTES),
            ]
        ),
    )
    return Result(
        "memory_timeline",
        table,
        tables={"summary": summary},
        notes=notes,
        params={"peak_time": peak_time, "entries": int(len(arr))},
    )
