"""Layer 4, frame: what every analysis takes in and hands back: Result (Arrow tables and
notes), Selection (ranks, steps, window, streams; which rows each analysis keeps), the
field metadata that carries units, the arrays kept in a trace's memo, and where the steps
come from (steps_from: the profiler's, inference passes', repeated launches'), and a
capture given beside a trace (with_capture: graph replays attributed to their capturing
ops)."""

from .capture_trace import with_capture
from .fields import NS, PCT
from .result import Result
from .select import Selection
from .steps_from import SOURCES, steps_from, with_steps, with_steps_from

__all__ = [
    "Result",
    "Selection",
    "NS",
    "PCT",
    "SOURCES",
    "steps_from",
    "with_steps",
    "with_steps_from",
    "with_capture",
]
