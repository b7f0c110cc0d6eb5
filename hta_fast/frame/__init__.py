"""Layer 4, frame: what every analysis takes in and hands back: Result (Arrow tables and
notes), Selection (ranks, steps, window, streams; which rows each analysis keeps), the
field metadata that carries units, the arrays kept in a trace's memo, and where the steps
come from (steps_from: the profiler's, inference passes', repeated launches'), and a
capture given beside a trace (with_capture: graph replays attributed to their capturing
ops).

The names below resolve on first use (hta_fast._lazy): reading one of them imports only
the module that defines it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_package

if TYPE_CHECKING:
    from .capture_trace import with_capture
    from .fields import NS, PCT
    from .result import Result
    from .select import Selection

# Each public name and the module that defines it (tests/project/test_startup.py holds it, the
# TYPE_CHECKING imports and __all__ equal).
PUBLIC = {
    "Result": "hta_fast.frame.result",
    "Selection": "hta_fast.frame.select",
    "NS": "hta_fast.frame.fields",
    "PCT": "hta_fast.frame.fields",
    "with_capture": "hta_fast.frame.capture_trace",
}

__all__ = [
    "Result",
    "Selection",
    "NS",
    "PCT",
    "with_capture",
]

lazy_package(__name__, PUBLIC)
