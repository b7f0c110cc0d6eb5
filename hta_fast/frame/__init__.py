"""Layer 4, frame: what every analysis takes in and hands back: Result (Arrow tables and
notes), Selection (ranks, steps, window, streams; which rows each analysis keeps), the
field metadata that carries units, and the arrays kept in a trace's memo."""

from .fields import NS, PCT
from .result import Result
from .select import Selection

__all__ = ["Result", "Selection", "NS", "PCT"]
