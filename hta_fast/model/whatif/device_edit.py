"""The what-if "this step on another GPU": each GPU event's new duration from the kernel
models (hta_fast.model.predict), as per-rank duration changes the replay applies.

predict() gives every launched GPU event of the trace a predicted duration on the target
device: kernels of a costed operator by their family's model, other compute kernels by the
ratio of memory bandwidths, communication kernels and host transfers unchanged. The change
handed to the replay is predicted - measured per event, so the graph's waits, CPU work and
launch order stay as recorded: the GPU is swapped, the host is not.
"""

from __future__ import annotations

from typing import Optional, Union

import numpy as np

from ...costs.devices import Device
from ...frame import select
from ...trace import Trace
from ...traceset import TraceSet
from ..predict import predict

Changes = dict[int, tuple[np.ndarray, np.ndarray]]


def device_changes(
    traces: Union[Trace, TraceSet],
    device: Union[str, Device],
    *,
    source_device: Union[str, Device, None] = None,
    devices_file: Optional[str] = None,
    allow_tf32: Union[bool, str] = False,
    efficiency_curves: bool = True,
    selection: Optional[select.Selection] = None,
) -> tuple[Changes, list[str]]:
    """Per rank, (GPU event rows, ns added to each one's duration) for the kernels predicted
    on `device`, and predict's notes."""
    r = predict(
        traces,
        device,
        source_device=source_device,
        devices_file=devices_file,
        allow_tf32=allow_tf32,
        efficiency_curves=efficiency_curves,
        selection=selection,
    )
    ev = r["events"]
    rank = ev["rank"].to_numpy()
    rows = ev["row"].to_numpy()
    delta = ev["predicted"].to_numpy() - ev["dur"].to_numpy().astype(np.float64)
    out: Changes = {}
    for k in np.unique(rank):
        sel = (rank == k) & (delta != 0)
        out[int(k)] = (rows[sel].astype(np.int64), delta[sel])
    return out, list(r.notes)
