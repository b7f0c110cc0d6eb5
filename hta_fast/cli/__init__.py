"""`hta-fast`: the command line. One module per command; this one builds the group.

    hta-fast info PATH...          what the traces hold
    hta-fast analyze PATH...       run analyses, print or write their tables
    hta-fast report PATH... -o F   one self-contained HTML report
    hta-fast doctor PATH...        why the GPU is idle; a CI gate (exit 1)
    hta-fast diff A B              what changed between two traces
    hta-fast ops PATH...           operators by shape: FLOPs, bytes, roofline
    hta-fast predict PATH... --device NAME   kernel time on another GPU
    hta-fast critical-path PATH... what bounds each step; replay, whatif: the graph model
    hta-fast convert PATH... -o D  a Parquet dataset partitioned by rank
    hta-fast slice PATH... --steps N -o F   a step as a trace small enough for Perfetto
    hta-fast query PATH... SQL     SQL over the traces' tables and any analysis by name
    hta-fast mcp --root DIR        the answers as an MCP server for agents (stdio)
    hta-fast demo                  a synthetic multi-rank trace set and its report

Exit status: 0 success, 1 a doctor gate failed, 2 bad input or usage.
"""

from __future__ import annotations

from . import (  # noqa: F401 (register)
    analyze,
    convert,
    demo,
    diff,
    doctor,
    info,
    mcp,
    model,
    ops,
    query,
    report,
    slice,
)
from .app import cli, main

__all__ = ["cli", "main"]
