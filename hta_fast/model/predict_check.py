"""A GPU prediction checked against the trace of the same workload recorded on the target.

kernel_time_errors predicts trace A onto trace B's device (model.predict) and compares the
GPU kernel time per step, per family and in all, with what B measured: the kernel model's
error, "no change" (B as fast as A) and the one-ratio baseline (each kernel x the target's
peak over the source's by its operator's bound). B is read only for its measured time and
its device: nothing of it enters the prediction. B's kernels take their families from
predicting B onto its own device (the same charging of kernels to operators).
"""

from __future__ import annotations

from typing import Iterable, Optional

import pyarrow as pa

from ..analysis.ops.roofline import resolve_device
from ..costs.devices import DeviceTable
from ..frame.fields import NS
from ..trace import Trace
from .predict import predict

__all__ = ["kernel_time_errors"]

ALL = "(all)"
SCHEMA = pa.schema(
    [
        pa.field("family", pa.string()),
        pa.field("measured_b", pa.float64(), metadata={**NS, "description": "per step"}),
        pa.field("model", pa.float64(), metadata={**NS, "description": "predicted, per step"}),
        pa.field("no_change", pa.float64(), metadata={**NS, "description": "A's, per step"}),
        pa.field("ratio", pa.float64(), metadata={**NS, "description": "the one-ratio baseline"}),
        pa.field("model_error", pa.float64(), metadata={"description": "|model - B| / B"}),
        pa.field("no_change_error", pa.float64()),
        pa.field("ratio_error", pa.float64()),
    ]
)


def _error(predicted: float, measured: float) -> Optional[float]:
    return abs(predicted - measured) / measured if measured > 0 else None


def _steps(trace: Trace) -> int:
    return max(trace.num_rows("steps"), 1)


def kernel_time_errors(
    a: Trace,
    b: Trace,
    *,
    ratio_families: Optional[Iterable[str]] = None,
    devices_file: Optional[str] = None,
) -> pa.Table:
    """Per family (and "(all)"): B's measured GPU kernel time per step, the model's, no
    change's and the ratio's, and each one's relative error. ratio_families as in predict
    (() compares the kernel model everywhere with the ratio)."""
    table = DeviceTable.load(devices_file)
    dev_b = resolve_device(b, None, table)
    if dev_b is None or resolve_device(a, None, table) is None:
        raise ValueError("both traces' devices must be in the device table")
    ev = predict(a, dev_b, devices_file=devices_file, ratio_families=ratio_families)["events"]
    own = predict(b, dev_b, devices_file=devices_file)["events"]
    na, nb = _steps(a), _steps(b)
    sums_a: dict[str, list[float]] = {}
    for fam, dur, pred, ratio in zip(
        ev["family"].to_pylist(),
        ev["dur"].to_pylist(),
        ev["predicted"].to_pylist(),
        ev["ratio_predicted"].to_pylist(),
    ):
        for key in (fam, ALL):
            s = sums_a.setdefault(key, [0.0, 0.0, 0.0])
            s[0], s[1], s[2] = s[0] + pred, s[1] + dur, s[2] + ratio
    sums_b: dict[str, float] = {}
    for fam, dur in zip(own["family"].to_pylist(), own["dur"].to_pylist()):
        for key in (fam, ALL):
            sums_b[key] = sums_b.get(key, 0.0) + dur
    rows = []
    for fam in sorted(set(sums_a) | set(sums_b), key=lambda f: (f == ALL, f)):
        m = sums_b.get(fam, 0.0) / nb
        pred, nc, ratio = (x / na for x in sums_a.get(fam, [0.0, 0.0, 0.0]))
        rows.append(
            {
                "family": fam,
                "measured_b": m,
                "model": pred,
                "no_change": nc,
                "ratio": ratio,
                "model_error": _error(pred, m),
                "no_change_error": _error(nc, m),
                "ratio_error": _error(ratio, m),
            }
        )
    return pa.Table.from_pylist(rows, schema=SCHEMA)
