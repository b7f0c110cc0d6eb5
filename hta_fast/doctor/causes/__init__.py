"""The causes the doctor knows, each declared once in its own module (its Cause record).

The registry is one line per cause below, in the order ties are shown: each imports a
cause's record, and REGISTRY is the records imported here, in their lines' order. Adding a
cause is its module and its line; the ranking, the model's savings, the gate, the outputs
and docs/doctor.md (docs/gen_doctor.py) read the record.
"""

# ruff: noqa: F401 - each record imported below is read through vars(), in line order

from __future__ import annotations

from ..views.gap_causes import PARTS, UNCHARGED
from .record import Cause

# isort: off
from .unrecorded_gpu_work import CAUSE as _unrecorded_gpu_work
from .one_off_stall import CAUSE as _one_off_stall
from .parallelism import CAUSE as _parallelism
from .input_pipeline import CAUSE as _input_pipeline
from .launch_bound import CAUSE as _launch_bound
from .memory_sync import CAUSE as _memory_sync
from .exposed_communication import CAUSE as _exposed_communication
from .rank_imbalance import CAUSE as _rank_imbalance
# isort: on

REGISTRY: tuple[Cause, ...] = tuple(v for v in dict(vars()).values() if isinstance(v, Cause))
CAUSES: tuple[str, ...] = tuple(c.key for c in REGISTRY)
BY_KEY: dict[str, Cause] = {c.key: c for c in REGISTRY}


def _check(causes: tuple[Cause, ...]) -> None:
    """One record per key, each gap part it names a part of the split charged to it alone,
    and the causes it needs registered."""
    keys = [c.key for c in causes]
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:
        raise RuntimeError(f"causes declared twice: {twice}")
    charged: dict[str, str] = {}
    for c in causes:
        for part in c.gap_parts:
            if part not in PARTS or part in UNCHARGED:
                raise RuntimeError(
                    f"{c.key}: {part!r} is no chargeable part of the gap split "
                    f"({', '.join(p for p in PARTS if p not in UNCHARGED)})"
                )
            if part in charged:
                raise RuntimeError(f"gap part {part!r} charged to {charged[part]} and {c.key}")
            charged[part] = c.key
        missing = [n for n in c.needs if n not in keys]
        if missing:
            raise RuntimeError(f"{c.key} needs causes not registered: {missing}")


_check(REGISTRY)


def examination_order() -> list[Cause]:
    """The causes in an order where each comes after the causes it needs."""
    done: list[Cause] = []
    pending = list(REGISTRY)
    while pending:
        ready = [c for c in pending if all(n in {d.key for d in done} for n in c.needs)]
        if not ready:
            raise RuntimeError(f"causes need each other: {[c.key for c in pending]}")
        done.extend(ready)
        pending = [c for c in pending if c not in ready]
    return done
