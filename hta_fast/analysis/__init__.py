"""Analyses: one module per question, each a pure function of a Trace or TraceSet and
parameters that returns a Result (see result.py). Selection keywords (ranks, steps,
window, streams) are shared by all (see select.py)."""
from .result import Result
from .select import Selection

__all__ = ["Result", "Selection"]
