"""Where an operator event's recorded arguments are: its row in the op_args table.

The FLOP models (through op_table's shape groups) and cat_sizes read an operator's shapes,
dtypes and sequence number from op_args; this is the one look-up from event rows to it.
"""

from __future__ import annotations

import numpy as np

from ..trace import Trace


def op_arg_positions(trace: Trace, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(pos, found): each event row's position in the op_args table, and whether it has
    one (pos is meaningless where not found)."""
    arg_row = trace.column("op_args", "row")
    if not len(arg_row) or not len(rows):
        return np.zeros(len(rows), np.int64), np.zeros(len(rows), bool)
    order = None
    if np.any(arg_row[1:] < arg_row[:-1]):
        order = np.argsort(arg_row, kind="stable")
        arg_row = arg_row[order]
    pos = np.minimum(np.searchsorted(arg_row, rows), len(arg_row) - 1)
    found = arg_row[pos] == rows
    if order is not None:
        pos = order[pos]
    return pos, found
