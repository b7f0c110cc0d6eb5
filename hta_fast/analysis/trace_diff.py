"""What changed between two traces: per operator/kernel name, how often it ran and for how
long on each side, in the chosen ranks and profiler steps.

Each side is read as loaded: no time alignment between the two and no step dropped. By
default each side uses its smallest rank and its first profiler step.
"""

from __future__ import annotations

import re
from typing import Any, Optional, Sequence, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..frame import select
from ..frame.fields import NS
from ..frame.result import Result
from ..schema import GPU_KINDS, EventKind
from ..trace import Trace
from ..traceset import TraceSet

__all__ = ["trace_diff", "ops_diff"]

DEVICES = ("all", "cpu", "gpu")
CHANGES = ("added", "deleted", "increased", "decreased", "unchanged")

_BRACKETED = re.compile(r"<[^<>]*>|\([^()]*\)")


def short_name(name: str) -> str:
    """A kernel or operator name without template arguments, function arguments and return
    type: `void at::native::foo<float, 4>(int, float)` -> `at::native::foo`. Memcpy and
    Memset names, and names without brackets, are kept as they are."""
    if name.startswith(("Memcpy", "Memset")) or ("<" not in name and "(" not in name):
        return name
    s = name.replace("->", "")
    while True:
        t = _BRACKETED.sub("", s)
        if t == s:
            break
        s = t
    # Brackets left unbalanced: drop what an unmatched closer would have closed.
    for opener, closer in (("<", ">"), ("(", ")")):
        while closer in s:
            i = s.index(closer)
            j = s.rfind(opener, 0, i)
            s = s[: max(j, 0)] + s[i + 1 :]
    return s.split(" ")[-1]


def _side(
    traces: Union[Trace, TraceSet],
    ranks: Optional[Union[int, Sequence[int]]],
    steps: Optional[Union[int, Sequence[int]]],
    device: str,
    use_short: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[int], list[int]]:
    """(names, counts, total durations) of one side, grouped by (short) name. Events
    belong to the step of steps_of()."""
    ts = select.as_traceset(traces)
    if len(ts) == 0:
        raise ValueError("the trace holds no ranks")
    if ranks is None:
        ranks = [min(ts.ranks)]
    elif isinstance(ranks, (int, np.integer)):
        ranks = [int(ranks)]
    missing = set(ranks) - set(ts.ranks)
    if missing:
        raise ValueError(f"no such rank(s): {sorted(missing)}; the trace holds {ts.ranks}")
    if steps is not None and isinstance(steps, (int, np.integer)):
        steps = [int(steps)]
    if steps is None:
        found = set()
        for r in ranks:
            t = ts[r]
            rows = select.profiler_step_rows(t)
            found.update(np.unique(t.column("events", "step")[rows]).tolist())
        found.discard(-1)
        if not found:
            raise ValueError("the trace has no profiler steps; pass steps explicitly")
        steps = [min(found)]
    step_arr = np.asarray(list(steps), np.int32)

    names, counts, durs = [], [], []
    for r in ranks:
        t = ts[r]
        col = t.column
        keep = np.isin(steps_of(t), step_arr)
        if device != "all":
            gpu = np.isin(col("events", "kind"), GPU_KINDS)
            keep &= gpu if device == "gpu" else ~gpu
        cat = col("events", "cat")
        trace_cat = _string_ids(t, "Trace")
        if len(trace_cat):
            keep &= ~np.isin(cat, trace_cat)
        rows = np.flatnonzero(keep)
        name_id = col("events", "name")[rows]
        ids, inv = np.unique(name_id, return_inverse=True)
        inv = inv.reshape(-1)
        c = np.bincount(inv, minlength=len(ids)).astype(np.int64)
        d = _sum_by(inv, col("events", "dur")[rows], len(ids))
        strs = t.strings.to_numpy(zero_copy_only=False)
        nm = np.array([strs[i] if i >= 0 else "" for i in ids], dtype=object)
        if use_short:
            nm = np.array([short_name(x) for x in nm], dtype=object)
        names.append(nm)
        counts.append(c)
        durs.append(d)
    names_all = np.concatenate(names) if names else np.array([], object)
    counts_all = np.concatenate(counts) if counts else np.array([], np.int64)
    durs_all = np.concatenate(durs) if durs else np.array([], np.int64)
    uniq, inv = np.unique(
        names_all.astype(str) if len(names_all) else names_all, return_inverse=True
    )
    inv = inv.reshape(-1)
    c = _sum_by(inv, counts_all, len(uniq))
    d = _sum_by(inv, durs_all, len(uniq))
    return uniq.astype(object), c, d, list(ranks), [int(s) for s in steps]


def steps_of(trace: Trace) -> np.ndarray:
    """The step column, with GPU annotations given the step of the CPU annotation they
    mirror (same external id), as GPU work takes its launch's step."""
    col = trace.column
    step = col("events", "step")
    kind = col("events", "kind")
    gpu_ann = np.flatnonzero((kind == EventKind.gpu_user_annotation) & (step < 0))
    if len(gpu_ann) == 0:
        return step
    ext = col("events", "external_id")
    cpu_ann = np.flatnonzero((kind == EventKind.user_annotation) & (ext >= 0) & (step >= 0))
    if len(cpu_ann) == 0:
        return step
    order = cpu_ann[np.argsort(ext[cpu_ann], kind="stable")]
    keys = ext[order]
    pos = np.minimum(np.searchsorted(keys, ext[gpu_ann]), len(keys) - 1)
    found = (keys[pos] == ext[gpu_ann]) & (ext[gpu_ann] >= 0)
    step = step.copy()
    step[gpu_ann[found]] = step[order[pos[found]]]
    return step


def _sum_by(code: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    out = np.zeros(n, np.int64)
    np.add.at(out, code, values.astype(np.int64, copy=False))
    return out


def _string_ids(trace: Trace, value: str) -> np.ndarray:
    return np.flatnonzero(pc.equal(trace.strings, value).to_numpy(zero_copy_only=False))


def trace_diff(
    control: Union[Trace, TraceSet],
    test: Union[Trace, TraceSet],
    *,
    control_rank: Optional[Union[int, Sequence[int]]] = None,
    test_rank: Optional[Union[int, Sequence[int]]] = None,
    control_steps: Optional[Union[int, Sequence[int]]] = None,
    test_steps: Optional[Union[int, Sequence[int]]] = None,
    device: str = "all",
    use_short_name: bool = False,
) -> Result:
    """Per name: control_counts, control_duration, test_counts, test_duration (ns, summed
    event durations), diff_counts and diff_duration (test - control) and
    counts_change_categories: added (only in test), deleted (only in control), increased,
    decreased or unchanged (count). Rows sorted by name.

    device: "all" events; "gpu" the events on the GPU timeline (kernels, memcpy, memset,
    syncs, GPU annotations); "cpu" the rest. use_short_name groups by short_name().
    GPU events count in the step of their launch, GPU annotations in the step of the CPU
    annotation they mirror.
    """
    if device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, not {device!r}")
    cn, cc, cd, cranks, csteps = _side(control, control_rank, control_steps, device, use_short_name)
    tn, tc, td, tranks, tsteps = _side(test, test_rank, test_steps, device, use_short_name)
    names = np.union1d(cn.astype(str), tn.astype(str)) if len(cn) + len(tn) else np.array([], str)
    ci = np.searchsorted(names, cn.astype(str))
    ti = np.searchsorted(names, tn.astype(str))
    n = len(names)
    c_counts = np.zeros(n, np.int64)
    c_dur = np.zeros(n, np.int64)
    t_counts = np.zeros(n, np.int64)
    t_dur = np.zeros(n, np.int64)
    c_counts[ci], c_dur[ci] = cc, cd
    t_counts[ti], t_dur[ti] = tc, td
    diff = t_counts - c_counts
    cat = np.full(n, "unchanged", dtype=object)
    cat[diff > 0] = "increased"
    cat[diff < 0] = "decreased"
    cat[c_counts == 0] = "added"
    cat[t_counts == 0] = "deleted"
    fields = [
        pa.field("short_name" if use_short_name else "name", pa.string()),
        pa.field("control_counts", pa.int64()),
        pa.field("control_duration", pa.int64(), metadata=NS),
        pa.field("test_counts", pa.int64()),
        pa.field("test_duration", pa.int64(), metadata=NS),
        pa.field("diff_counts", pa.int64()),
        pa.field("diff_duration", pa.int64(), metadata=NS),
        pa.field("counts_change_categories", pa.string()),
    ]
    table = pa.Table.from_arrays(
        [
            pa.array(names.tolist(), pa.string()),
            pa.array(c_counts),
            pa.array(c_dur),
            pa.array(t_counts),
            pa.array(t_dur),
            pa.array(diff),
            pa.array(t_dur - c_dur),
            pa.array(cat.tolist(), pa.string()),
        ],
        schema=pa.schema(fields),
    )
    params = {
        "control_rank": cranks,
        "test_rank": tranks,
        "control_steps": csteps,
        "test_steps": tsteps,
        "device": device,
        "use_short_name": use_short_name,
    }
    return Result("trace_diff", table, params=params)


def ops_diff(
    control: Union[Trace, TraceSet], test: Union[Trace, TraceSet], **kwargs: Any
) -> dict[str, list[str]]:
    """Names by change of count: {"added", "deleted", "increased", "decreased",
    "unchanged"} -> sorted names. Keywords as trace_diff."""
    res = trace_diff(control, test, **kwargs)
    names = res.table.column(0).to_pylist()
    cats = res.table.column("counts_change_categories").to_pylist()
    out: dict[str, list[str]] = {c: [] for c in CHANGES}
    for n, c in zip(names, cats):
        out[c].append(n)
    return out
