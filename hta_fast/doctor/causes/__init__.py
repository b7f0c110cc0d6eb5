"""The causes the doctor knows, each declared once in its own module (its Cause record),
in the order ties are shown."""

from __future__ import annotations

from . import (
    exposed_communication,
    input_pipeline,
    launch_bound,
    memory_sync,
    one_off_stall,
    parallelism,
    rank_imbalance,
    unrecorded_gpu_work,
)
from .record import Cause

REGISTRY: tuple[Cause, ...] = (
    unrecorded_gpu_work.CAUSE,
    one_off_stall.CAUSE,
    parallelism.CAUSE,
    input_pipeline.CAUSE,
    launch_bound.CAUSE,
    memory_sync.CAUSE,
    exposed_communication.CAUSE,
    rank_imbalance.CAUSE,
)
CAUSES: tuple[str, ...] = tuple(c.key for c in REGISTRY)
BY_KEY: dict[str, Cause] = {c.key: c for c in REGISTRY}


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
