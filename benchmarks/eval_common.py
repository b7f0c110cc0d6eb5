"""What the evaluators (eval_pairs, eval_predict, eval_whatif_device) measure, one way for
all three, and the baselines they print beside the model.

Time per step. A's, B's and the prediction's come from the same replay (what_if): A and B
are their traces replayed unedited, the prediction A replayed with the edit. The time per
step is what_if's "per_step" table (hta_fast.model.whatif.per_step, the figure `hta-fast
whatif` prints): chained (the default), per rank the steps from the first one's start to the
last one's end, summed over ranks, over the steps' count; window by window, each window's
time, summed, over the windows' count. Measuring the
three alike leaves the edit as the only difference between A and the prediction, and the
replay's own error out of the comparison with B.

A trace without steps (no ProfilerStep#N events, and no --steps-from source that finds
any) is one step: the whole trace. Every count per step then counts every event of the
trace, so that a ratio of two such counts is never a division by zero; where a figure still
has nothing to divide by it is None and prints as "n/a".

The spec-ratio baseline: each kernel's time scaled by the target device's peak over the
source device's, for the kernel's bound (its operator's roofline time on the target over
that on the source, hta_fast.model.predict's "ops" table), memory bandwidth where it has no
roofline. It reads nothing from the target trace but its device: what a spec sheet alone
predicts, without the model's efficiency curves or latency split.
"""

from __future__ import annotations

import argparse
import os
from typing import Any, NamedTuple, Optional, Union

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.join(HERE, "..", "..", "shared", "traces")

# predict's family for communication kernels: they keep their time in the spec-ratio
# baseline as in the model (they run at the network's speed, not the GPU's)
COMMUNICATION = "(communication)"

Changes = dict[int, tuple[np.ndarray, np.ndarray]]


def add_steps_from(ap: argparse.ArgumentParser) -> None:
    """The --steps-from option, the same on every evaluator."""
    from hta_fast.steps.steps_from import SOURCES

    ap.add_argument(
        "--steps-from",
        choices=SOURCES,
        default="profiler",
        metavar="SOURCE",
        help="where both traces' steps come from: "
        + ", ".join(SOURCES)
        + " (default profiler: the ProfilerStep#N events; a trace without any is one step)",
    )


def load(path: str, steps_from: str = "profiler", first_rank: bool = False):
    """A trace file, or a folder of ranks (its first rank alone with first_rank), with its
    steps from `steps_from` (hta_fast.steps.steps_from.SOURCES)."""
    import hta_fast
    from hta_fast.steps.steps_from import with_steps_from

    if os.path.isdir(path):
        traces = hta_fast.load_dir(path)
        if first_rank:
            traces = traces[traces.ranks[0]]
    else:
        traces = hta_fast.load(path)
    return with_steps_from(traces, steps_from)


class StepTime(NamedTuple):
    """ns per step: `replayed` the trace unedited, `predicted` with the edits (None where the
    replay holds no step), over `steps` steps, and what_if's result."""

    replayed: Optional[float]
    predicted: Optional[float]
    steps: int
    result: Any


def step_time(traces, chained: bool = True, **edits: Any) -> StepTime:
    """The time per step of `traces` replayed unedited and with `edits` (what_if's keywords),
    as the module doc defines it."""
    from hta_fast.model.whatif.steps import what_if

    r = what_if(traces, chained=chained, **edits)
    row = r["per_step"].to_pylist()[0]
    return StepTime(row["replayed"], row["predicted"], row["steps"], r)


def rank_time_per_step(trace, kinds) -> float:
    """Summed duration of one rank's events of these kinds inside its steps, per step (ns);
    a rank without steps is one step of all its events."""
    kind, step = trace.column("events", "kind"), trace.column("events", "step")
    dur = np.maximum(trace.column("events", "dur"), 0)
    in_steps = step >= 0
    if not in_steps.any():
        return float(dur[np.isin(kind, kinds)].sum())
    sel = np.isin(kind, kinds) & in_steps
    return float(dur[sel].sum()) / len(np.unique(step[in_steps]))


def time_per_step(traces, kinds) -> float:
    """rank_time_per_step over the ranks (their mean)."""
    from hta_fast.frame.select import as_traceset

    ts = as_traceset(traces)
    out = [rank_time_per_step(ts[rank], kinds) for rank in ts.ranks]
    return float(np.mean(out)) if out else 0.0


def kernel_time_per_step(traces) -> float:
    from hta_fast.schema import EventKind

    return time_per_step(traces, [EventKind.kernel])


def cpu_op_time_per_step(traces) -> float:
    from hta_fast.schema import EventKind

    return time_per_step(traces, [EventKind.cpu_op])


def ratio(num: Optional[float], den: Optional[float]) -> Optional[float]:
    """num / den, None where either is unknown or den is 0."""
    if num is None or den is None or den == 0:
        return None
    return num / den


def pct_error(x: Optional[float], ref: Optional[float]) -> Optional[float]:
    """(x - ref) / ref in percent; None where it cannot be computed."""
    r = ratio(None if x is None or ref is None else x - ref, ref)
    return None if r is None else 100.0 * r


def fmt(x: Optional[float], spec: str, width: int) -> str:
    """x formatted, or "n/a", right-aligned in width."""
    return f"{'n/a' if x is None else format(x, spec):>{width}}"


def pct(x: Optional[float], width: int) -> str:
    """A percentage with its sign and "%", or "n/a", right-aligned in width."""
    return f"{'n/a' if x is None else format(x, '+.1f') + '%':>{width}}"


def ms(ns: Optional[float]) -> Optional[float]:
    return None if ns is None else ns / 1e6


def rounded(x: Optional[float], digits: int) -> Optional[float]:
    return None if x is None else round(x, digits)


def device_of(traces, table=None):
    """The device table's entry for the GPU the traces' first rank was recorded on (None
    where the table does not know it)."""
    from hta_fast.analysis.ops.roofline import resolve_device
    from hta_fast.costs.devices import DeviceTable
    from hta_fast.frame.select import as_traceset

    ts = as_traceset(traces)
    return resolve_device(ts[ts.ranks[0]], None, table or DeviceTable.load(None))


def bandwidth_ratio(src, dst) -> float:
    """Time on dst over time on src of memory-bound work: src's bandwidth over dst's."""
    return src.memory_gbps / dst.memory_gbps


def group_spec_ratios(ops, src, dst) -> np.ndarray:
    """Per row of predict's "ops" table, its roofline time on the target over that on the
    source (the bound term on each device); the bandwidth ratio where it has no roofline."""
    r_src = np.asarray(ops["roofline_source"].to_numpy(zero_copy_only=False), np.float64)
    r_dst = np.asarray(ops["roofline_device"].to_numpy(zero_copy_only=False), np.float64)
    ok = np.isfinite(r_src) & np.isfinite(r_dst) & (r_src > 0) & (r_dst > 0)
    out = np.full(len(r_src), bandwidth_ratio(src, dst))
    out[ok] = r_dst[ok] / r_src[ok]
    return out


def family_spec_ratios(ops, src, dst) -> dict[str, float]:
    """Per family of predict's "ops" table, the summed roofline time of its groups on the
    target over that on the source: one ratio per family, as a spec sheet would scale it."""
    r_src = np.nan_to_num(np.asarray(ops["roofline_source"].to_numpy(zero_copy_only=False)))
    r_dst = np.nan_to_num(np.asarray(ops["roofline_device"].to_numpy(zero_copy_only=False)))
    family = np.array([f or "" for f in ops["family"].to_pylist()], dtype=object)
    out = {}
    for f in sorted(set(family)):
        s, d = r_src[family == f].sum(), r_dst[family == f].sum()
        if s > 0 and d > 0:
            out[f] = float(d / s)
    return out


def spec_ratio_changes(traces, src, dst, allow_tf32: Union[bool, str] = False) -> Changes:
    """Per rank, (GPU event rows, ns added to each one's duration) that scale every GPU
    kernel by its family's spec ratio (family_spec_ratios; the bandwidth ratio for a family
    without a roofline; communication kernels unchanged): what_if's duration_change, built
    as hta_fast.model.whatif.device_changes builds the model's."""
    from hta_fast.model.predict import predict

    r = predict(traces, dst, source_device=src, allow_tf32=allow_tf32)
    fam_ratio = family_spec_ratios(r["ops"], src, dst)
    bw = bandwidth_ratio(src, dst)
    ev = r["events"]
    rank = ev["rank"].to_numpy()
    rows = ev["row"].to_numpy()
    dur = ev["dur"].to_numpy().astype(np.float64)
    scale = np.array(
        [
            1.0 if f == COMMUNICATION else fam_ratio.get(f or "", bw)
            for f in ev["family"].to_pylist()
        ],
        np.float64,
    )
    delta = dur * (scale - 1.0)
    out: Changes = {}
    for k in np.unique(rank):
        sel = (rank == k) & (delta != 0)
        out[int(k)] = (rows[sel].astype(np.int64), delta[sel])
    return out
