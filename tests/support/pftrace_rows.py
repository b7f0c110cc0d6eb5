"""A loaded trace's tables as rows to compare between two readings of one run (JSON and
Perfetto protobuf): tests/loading/test_pftrace.py, test_slice_pftrace.py and
benchmarks/bench_pftrace.py."""

from __future__ import annotations

from typing import Any, Optional, Sequence

import hta_fast
from hta_fast._named_tables import TABLES
from hta_fast.schema import STRING_ID_BASE

# The tables whose `row` names the event a row belongs to.
SIDE_TABLES = ("kernel_args", "op_args", "comm_args", "sync_args", "steps")


def table_rows(
    trace: hta_fast.Trace,
    *,
    flow_drops: Sequence[str] = ("cat", "name"),
    unbind_flow_starts: bool = False,
    drop_string_ids: bool = False,
) -> dict[str, list]:
    """Every table as sorted rows: a row index (events' partner and parent, a side table's
    row, a flow's event) replaced by the event it points to, since the two readers store
    events in another order.

    Flows go without the fields in `flow_drops` (a Perfetto flow has no name or category);
    with `unbind_flow_starts`, every flow start's binds_enclosing reads 0. With
    `drop_string_ids`, the rows of a string pid or tid (and side-table rows of their
    events) are left out, and meta rows written twice count once.
    """
    events = trace.to_arrow("events").to_pylist()

    def event_key(i: Optional[int]) -> Any:
        if i is None or i < 0:
            return None
        e = events[i]
        return (e["ts"], e["dur"], e["pid"], e["tid"], e["name"])

    out: dict[str, list] = {}
    for name in TABLES:
        rows = events if name == "events" else trace.to_arrow(name).to_pylist()
        fixed = []
        for r in rows:
            r = dict(r)
            if drop_string_ids and any(
                (r.get(c) is not None and r[c] <= STRING_ID_BASE) for c in ("pid", "tid")
            ):
                continue
            for col in ("partner", "parent", "row", "event"):
                if col in r:
                    r[col] = event_key(r[col])
            if drop_string_ids and name in SIDE_TABLES and r["row"] is not None:
                if any(v <= STRING_ID_BASE for v in r["row"][2:4]):
                    continue
            if name == "flows":
                for col in flow_drops:
                    del r[col]
                if unbind_flow_starts and r["phase"] == "s":
                    r["binds_enclosing"] = 0
            fixed.append(tuple(sorted(r.items())))
        if name == "meta" and drop_string_ids:
            fixed = list(set(fixed))  # a process or thread named twice has one descriptor
        out[name] = sorted(fixed, key=repr)
    return out
