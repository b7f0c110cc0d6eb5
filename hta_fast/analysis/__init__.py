"""Analyses: one module per question, each a pure function of a Trace or TraceSet and
parameters that returns a Result (see result.py). Selection keywords (ranks, steps,
window, streams) are shared by all (see select.py)."""
from ..frame.result import Result
from ..frame.select import Selection

__all__ = ["Result", "Selection"]
