"""No silent no-ops: an edit that matches nothing in the selected events is an error.

A what-if whose regex or kernel class matches no event replays the trace unchanged and
reports 0.00 %, which reads as "this would not help" when it means "this edit is not in
the trace" (a typo in a kernel name, a class the trace has none of). what_if raises a
ValueError naming each such key before replaying; the command line turns it into exit 2.
"""

from __future__ import annotations

import re
from typing import Optional, Union

import numpy as np

from ...frame import select
from ...schema import CPU_KINDS, GPU_WORK_KINDS, KernelClass
from ...trace import Trace
from ...traceset import TraceSet
from .edits import Edits


def _names(trace: Trace, column: str, rows: np.ndarray) -> list[str]:
    ids = np.unique(trace.column("events", column)[rows])
    return trace.names_at(ids)


def _unmatched_on(trace: Trace, mask: Optional[np.ndarray], edits: Edits) -> set[str]:
    """The edit keys (as the messages name them) that match no event of this trace."""
    kind = trace.column("events", "kind")
    on = np.ones(len(kind), bool) if mask is None else mask
    gpu = np.flatnonzero(on & np.isin(kind, GPU_WORK_KINDS))
    cpu = np.flatnonzero(on & np.isin(kind, CPU_KINDS))
    missing: set[str] = set()
    if edits.kernel_class:
        classes = set(np.unique(trace.column("events", "kernel_class")[gpu]).tolist())
        missing |= {
            f"kernel class {k}" for k in edits.kernel_class if int(KernelClass[k]) not in classes
        }
    if edits.name:
        names = _names(trace, "name", gpu)
        missing |= {
            f"kernel name /{p}/" for p in edits.name if not any(re.search(p, n) for n in names)
        }
    if edits.category:
        cats = set(_names(trace, "cat", gpu))
        missing |= {f"GPU category {c!r}" for c in edits.category if c not in cats}
    if edits.op_scale:
        names = _names(trace, "name", cpu)
        missing |= {
            f"CPU op /{p}/" for p in edits.op_scale if not any(re.search(p, n) for n in names)
        }
    return missing


def check_edits_match(
    traces: Union[Trace, TraceSet], edits: Edits, selection: select.Selection
) -> None:
    """Raises ValueError naming every scale edit (kernel class, kernel name, GPU category,
    CPU op) that matches no event of the selected ranks and steps it applies to."""
    if not (edits.kernel_class or edits.name or edits.category or edits.op_scale):
        return
    missing: Optional[set[str]] = None
    for rank, trace, mask in select.each_rank(traces, selection):
        if not edits.applies_to(rank):
            continue
        here = _unmatched_on(trace, mask, edits)
        missing = here if missing is None else missing & here
    if missing:
        raise ValueError(
            "the edit matches no event of the selected steps and ranks, so it would change "
            f"nothing: {', '.join(sorted(missing))}"
        )
