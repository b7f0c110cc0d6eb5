"""The tables of one rank as attributes (`.events`, `.kernel_args`, ...), each built once, when
first asked for, by the class's own `_table(name)`: a loaded Trace builds them over its
columns, a dataset rank reads them from Parquet.

This is the one list of a trace's tables: TABLES (the names the core, the cache and the
dataset store them under) and TABLE_ATTRIBUTES (the attribute of each; "meta" is
`.meta_events`, since `.meta` is the header)."""

from __future__ import annotations

from functools import cached_property

import pyarrow as pa

from .memo import Memo


def _table_property(name: str, doc: str) -> "cached_property[pa.Table]":
    def get(self: "NamedTables") -> pa.Table:
        return self._table(name)

    get.__doc__ = doc
    return cached_property(get)


class NamedTables:
    def _table(self, name: str) -> pa.Table:
        raise NotImplementedError

    events = _table_property("events", "One row per complete event (ph X).")
    kernel_args = _table_property(
        "kernel_args", "Launch arguments of GPU events and of launch calls (row -> events)."
    )
    op_args = _table_property("op_args", "Shapes and ids of CPU ops (row -> events).")
    comm_args = _table_property("comm_args", "Collective arguments (row -> events).")
    sync_args = _table_property("sync_args", "Wait and sync arguments (row -> events).")
    flows = _table_property("flows", "Flow events (ph s/t/f).")
    counters = _table_property("counters", "Counter events (ph C).")
    instants = _table_property("instants", "Instant events (ph i/I).")
    meta_events = _table_property("meta", "Metadata events (ph M).")
    steps = _table_property(
        "steps", "The ProfilerStep#N events, in file order: row (in events), step, ts, dur."
    )

    @property
    def memo(self) -> Memo:
        """Values derived from this rank's tables, each computed once (see hta_fast.memo)."""
        memo = self.__dict__.get("_memo")
        if memo is None:
            memo = self.__dict__["_memo"] = Memo()
        return memo

    def named_tables(self) -> dict[str, pa.Table]:
        """Attribute name -> table, for every table (each built now if not yet)."""
        return {attr: getattr(self, attr) for attr in TABLE_ATTRIBUTES}


TABLE_ATTRIBUTES: tuple[str, ...] = tuple(
    name for name, v in vars(NamedTables).items() if isinstance(v, cached_property)
)
TABLES: tuple[str, ...] = tuple("meta" if a == "meta_events" else a for a in TABLE_ATTRIBUTES)
