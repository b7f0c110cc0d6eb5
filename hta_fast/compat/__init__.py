"""The reference tool's API over hta_fast: change one import, keep the notebook.

    from hta_fast.compat import TraceAnalysis   # was: from hta.trace_analysis import ...

Method names, parameters, pandas outputs and column names follow the reference; plots are
drawn only when visualize=True is passed. Where the reference is wrong, the numbers here
are right (docs/differences.md says where and why)."""

from .memory import MemoryAnalysis
from .trace_analysis import TraceAnalysis
from .trace_diff import TraceDiff

__all__ = ["TraceAnalysis", "TraceDiff", "MemoryAnalysis"]
