"""The one walk over a rank's steps: the graphs a model replays (docs/model.md, "Chains").

chained (the default): each run of consecutive selected steps of a rank is one graph (steps
1, 2, 3 and 5 selected: two chains, 1-3 and 5), so that a step starts where the step before
it ends in the replay. chained=False: each selected step's window alone, its carried-over
work at its measured time. A rank without profiler steps is one window of its whole trace
either way. Both hand out hta_fast.model.graph.chain.Chain (a window is a chain of one step),
so replay, critical path and what-if have one code path for both.

Building a rank's graphs is most of a replay's time. Inside `chains_kept()` (the doctor's
what-if replays, one per cause; the report, whose critical path follows them) a rank's
chains for one selection are built once and handed out again, read-only; outside it each
walk builds its own and lets them go rank by rank (a multi-GB rank's graph is large).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from typing import Any, Iterator, Optional, Union

import numpy as np

from ...frame import select
from ...frame.idle_threads import idle_thread_mask
from ...memo import freeze_arrays
from ...trace import Trace
from ...traceset import TraceSet
from .carried import carry_candidates
from .chain import Chain
from .chain_build import build_chain, whole_trace
from .dependency_graph import graph_rows


def _runs(chosen: np.ndarray, chained: bool) -> list[np.ndarray]:
    """Indices of the chosen steps, in runs consecutive in the trace's step order (chained)
    or one by one."""
    idx = np.flatnonzero(chosen)
    if not chained:
        return [idx[i : i + 1] for i in range(len(idx))]
    if not len(idx):
        return []
    return np.split(idx, np.flatnonzero(np.diff(idx) > 1) + 1)


# (id of the trace, rank, selection, chained) -> (the trace, its chains), while kept.
_KEPT: contextvars.ContextVar[Optional[dict[tuple, tuple[Trace, list[Chain]]]]] = (
    contextvars.ContextVar("kept_chains", default=None)
)


@contextlib.contextmanager
def chains_kept() -> Iterator[None]:
    """Within this block, walk hands out the chains it built before for the same rank,
    selection and chaining (module doc); they are let go when the outermost block ends."""
    if _KEPT.get() is not None:  # an outer block keeps them already
        yield
        return
    token = _KEPT.set({})
    try:
        yield
    finally:
        _KEPT.reset(token)


def _selection_key(sel: select.Selection, chained: bool) -> tuple[Any, ...]:
    """What decides a rank's chains, other than the rank: every field of the selection but
    its ranks, and the chaining."""
    return tuple(
        tuple(v) if isinstance(v, (list, tuple, np.ndarray)) else v
        for v in (getattr(sel, f.name) for f in dataclasses.fields(sel) if f.name != "ranks")
    ) + (chained,)


def walk(
    traces: Union[Trace, TraceSet], sel: select.Selection, chained: bool = True
) -> Iterator[Chain]:
    """The chains of the selection, rank by rank, steps in time order (module doc)."""
    kept = _KEPT.get()
    for rank, trace, mask in select.each_rank(traces, sel):
        if kept is None:
            yield from _rank_chains(trace, rank, mask, sel, chained)
            continue
        key = (id(trace), rank, _selection_key(sel, chained))
        held = kept.get(key)
        if held is None or held[0] is not trace:
            chains = list(_rank_chains(trace, rank, mask, sel, chained))
            for chain in chains:  # shared: no reader may change them
                freeze_arrays(chain)
                freeze_arrays(chain.graph)
            held = kept[key] = (trace, chains)
        yield from held[1]


def _rank_chains(
    trace: Trace, rank: int, mask: Optional[np.ndarray], sel: select.Selection, chained: bool
) -> Iterator[Chain]:
    """One rank's chains of the selection (walk)."""
    # A background thread's one spanning event and a helper thread's polling calls are
    # no work of any step.
    busy = ~idle_thread_mask(trace)
    mask = busy if mask is None else mask & busy
    all_rows = graph_rows(trace, mask)
    steps = trace.column("steps", "step")
    if len(steps) == 0:
        if len(all_rows):
            yield whole_trace(trace, rank, all_rows)
        return
    order = np.argsort(trace.column("steps", "ts"), kind="stable")
    steps = steps[order]
    starts = trace.column("steps", "ts")[order]
    ends = starts + np.maximum(trace.column("steps", "dur")[order], 0)
    chosen = (
        np.ones(len(steps), bool)
        if sel.steps is None
        else np.isin(steps, np.array(sorted(sel.steps), np.int64))
    )
    step_of = trace.column("events", "step")[all_rows]
    # Carried work comes from the steps before, selected or not.
    any_step = (
        dataclasses.replace(sel, steps=None).event_mask(trace) if sel.steps is not None else mask
    )
    any_step = busy if any_step is None else any_step & busy
    gpu = carry_candidates(trace, graph_rows(trace, any_step))
    for run in _runs(chosen, chained):
        chain = build_chain(
            trace,
            rank,
            all_rows,
            step_of,
            gpu,
            steps[run],
            starts[run],
            ends[run],
            window=not chained,
        )
        if chain is not None:
            yield chain


def step_key(chain: Chain) -> tuple[tuple[bool, int], ...]:
    """A sort key of a chain's steps: whole traces (step None) first, then by step."""
    return tuple((s is not None, s or 0) for s in chain.steps)


def walk_groups(
    traces: Union[Trace, TraceSet], sel: select.Selection, chained: bool = True
) -> Iterator[list[Chain]]:
    """The chains of all selected ranks that cover the same steps, to replay together
    (ranks without profiler steps form one group of whole traces), steps in order."""
    groups: dict[tuple[Optional[int], ...], list[Chain]] = {}
    keys: dict[tuple[Optional[int], ...], tuple] = {}
    for chain in walk(traces, sel, chained):
        key = tuple(chain.steps)
        groups.setdefault(key, []).append(chain)
        keys[key] = step_key(chain)
    for key in sorted(groups, key=lambda k: keys[k]):
        yield groups[key]
