"""Trace: one rank's events as Arrow tables, plus what the header says about the run."""

from __future__ import annotations

import dataclasses
import os
import re
import warnings
from functools import cached_property
from typing import Any, Mapping, Optional, Sequence

import numpy as np
import pyarrow as pa

from . import _arrow, saved_trace, step_columns
from . import interop as _interop
from ._arrow import array_of
from ._named_tables import TABLE_ATTRIBUTES, TABLES, NamedTables
from .errors import ErrorCode, TraceFormatError
from .raw_columns import RawColumns

__all__ = ["Trace", "TraceMeta", "TABLES", "open_saved"]


@dataclasses.dataclass(frozen=True)
class TraceMeta:
    """What the trace header says, normalised across eras and vendors.

    The header is parsed once, by the core (csrc/parse/header_fields.h), which needs
    baseTimeNanoseconds for the timestamps anyway and so gives one answer for duplicated keys
    and one depth limit; Python only reads the values it hands over."""

    path: Optional[str]
    rank: Optional[int]
    world_size: Optional[int]
    base_time_ns: int
    devices: list[dict[str, Any]]
    distributed: dict[str, Any]
    json_bytes: int
    header: dict[str, Any]

    @staticmethod
    def from_header(
        header: dict[str, Any],
        path: Optional[str],
        json_bytes: int,
        base_time_ns: Optional[int] = None,
    ) -> "TraceMeta":
        """base_time_ns: what the core added to the timestamps (a load's, or a save's record of
        it); None reads baseTimeNanoseconds from `header` (a header from elsewhere, or a save
        written before saves recorded it).

        A header value of the wrong type never raises here: a distributedInfo, rank,
        world_size or deviceProperties that cannot be read is left out with a warning. Only
        baseTimeNanoseconds, which every timestamp depends on, raises TraceFormatError."""
        if base_time_ns is None:
            base_time_ns = _base_time(header, path)
        dist = header.get("distributedInfo")
        if not isinstance(dist, dict):
            _ignored(path, "distributedInfo", dist, "an object")
            dist = {}
        devices_key = "deviceProperties" if "deviceProperties" in header else "computeProperties"
        devices = header.get(devices_key)
        if not isinstance(devices, list):
            _ignored(path, devices_key, devices, "a list")
            devices = []
        return TraceMeta(
            path=path,
            rank=_header_int(path, "distributedInfo.rank", dist.get("rank")),
            world_size=_header_int(
                path, "distributedInfo.world_size", dist.get("world_size"), minimum=0
            ),
            base_time_ns=base_time_ns,
            devices=devices,
            distributed=dist,
            json_bytes=json_bytes,
            header=header,
        )


def _ignored(path: Optional[str], key: str, value: Any, wanted: str, stacklevel: int = 5) -> None:
    # Absent (None) and empty values are common and mean "not recorded": no warning.
    # stacklevel 5: the warning points at the caller of load().
    if value is None or value == "" or value == 0:
        return
    shown = repr(value)
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    warnings.warn(
        f"{path or '<bytes>'}: trace header {key} is {shown}, not {wanted}; ignored",
        stacklevel=stacklevel,
    )


def _as_int(value: Any) -> Optional[int]:
    """An int, or a string of ASCII digits (with an optional '-'), as int; else None."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and _INT_TEXT.fullmatch(value):
        return int(value)
    return None


_INT_TEXT = re.compile(r"-?[0-9]+")


def _header_int(
    path: Optional[str], key: str, value: Any, minimum: Optional[int] = None
) -> Optional[int]:
    n = _as_int(value)
    if n is not None and minimum is not None and n < minimum:
        n = None
    if n is None and value is not None:
        _ignored(
            path, key, value, "an integer" if minimum is None else f"an integer >= {minimum}", 6
        )
    return n


def _base_time(header: dict[str, Any], path: Optional[str]) -> int:
    value = header.get("baseTimeNanoseconds")
    if value is None:
        return 0
    if isinstance(value, float) and value.is_integer() and 0 <= value < 2**63:
        return int(value)
    n = _as_int(value)
    if n is None or not -(2**63) <= n < 2**63:
        raise TraceFormatError(
            path,
            None,
            f"baseTimeNanoseconds is not an int64: {str(value)[:40]!r}",
            code=ErrorCode.bad_field,
            key="baseTimeNanoseconds",
        )
    return n


class Trace(NamedTables):
    """One rank of a profile. Tables are pyarrow Tables built over the core's buffers.

    events       one row per complete event (ph X); ts/dur in ns; kind, kernel_class,
                 partner (launch <-> GPU event), parent (CPU nesting), step
    kernel_args  grid/block/registers/occupancy/bytes/bandwidth of GPU events, the kernel
                 a launch call names where it records one (row -> events)
    op_args      shapes and ids of CPU ops; comm_args collectives; sync_args waits
    flows, counters, instants, meta_events   the other phases
    steps        the steps: the ProfilerStep#N events, or the windows of with_steps
    stats        what the loader counted and skipped
    """

    def __init__(
        self,
        raw: RawColumns,
        meta: TraceMeta,
        rank: Optional[int] = None,
        steps_source: str = "profiler",
    ):
        self._raw = raw
        self.meta = meta
        self.rank = rank if rank is not None else (meta.rank if meta.rank is not None else 0)
        # What the steps are: "profiler" (the ProfilerStep#N events) or what with_steps was
        # told they came from (hta_fast.steps.steps_from's sources).
        self.steps_source = steps_source

    def with_steps(
        self,
        row: np.ndarray,
        step: np.ndarray,
        ts: np.ndarray,
        dur: np.ndarray,
        source: str,
    ) -> "Trace":
        """A copy of this rank whose steps are these windows (row in events of the event
        that marks each, step number, ts and dur in ns) instead of its ProfilerStep#N
        events: the `steps` table and events.step are rebuilt by the loader's rule
        (hta_fast.step_columns), every other column is shared. Whatever reads steps (the
        selection, the analyses, the doctor, the model) then reads these. `source` says
        where they came from (Trace.steps_source). No windows: a rank without steps."""
        raw = step_columns.reassigned(self._raw, row, step, ts, dur)
        return Trace(raw, self.meta, self.rank, steps_source=source)

    # --- tables -----------------------------------------------------------------------
    @cached_property
    def strings(self) -> pa.Array:
        """The string pool: every name, category and string argument, by index."""
        return _arrow.string_dictionary(self._raw.string_offsets, self._raw.string_data)

    def _table(self, name: str) -> pa.Table:
        return _arrow.table(name, self._raw.tables[name], self.strings)

    def column(self, table: str, name: str) -> np.ndarray:
        """A raw column as numpy, sentinels included (-1 / NaN): for vectorised kernels."""
        return self._raw.tables[table][name]

    def column_array(self, table: str, name: str) -> pa.Array:
        """One column as an Arrow array (strings as a dictionary over the pool), built for
        the caller and not kept: a few columns of a table read on thousands of ranks cost
        far less than each rank's whole table kept as an attribute."""
        return _arrow.column(table, name, self._raw.tables[table][name], self.strings)

    def strings_at(self, ids: np.ndarray) -> pa.Array:
        """The pool strings of these string ids (a name or cat column's values), as a
        string array, null where an id is negative (no string). Reads the pool only: the
        Arrow table of the column is not built."""
        ids = np.asarray(ids, np.int64)
        taken = self.strings.take(_arrow.masked(np.maximum(ids, 0), ids < 0))
        return taken.cast(pa.string())

    def names_at(self, ids: np.ndarray, missing: str = "") -> list[str]:
        """The pool strings of these string ids as Python strings, `missing` where an id is
        negative (no string)."""
        return [missing if s is None else s for s in self.strings_at(ids).to_pylist()]

    def columns(self, table: str) -> Mapping[str, np.ndarray]:
        """Every raw column of one table, by name (see column)."""
        return self._raw.tables[table]

    def copy(
        self,
        tables: Optional[Mapping[str, Mapping[str, np.ndarray]]] = None,
        strings: Sequence[str] = (),
    ) -> "Trace":
        """A Trace over the same columns with a memo of its own (what is derived from it is
        worked out anew). `tables` replaces whole tables (table -> every column's raw
        values, as `columns` gives them); `strings` are appended to the string pool, so
        every string id of this trace keeps its string."""
        raw = self._raw
        replaced = dict(raw.tables)
        for name, columns in (tables or {}).items():
            old = raw.tables[name]
            if set(columns) != set(old) or any(columns[c].dtype != old[c].dtype for c in old):
                raise ValueError(f"table {name!r}: give every column with its dtype")
            if len({len(v) for v in columns.values()}) > 1:
                raise ValueError(f"table {name!r}: columns of different lengths")
            replaced[name] = {c: columns[c] for c in old}
        offsets, data = raw.string_offsets, raw.string_data
        if strings:
            encoded = [s.encode() for s in strings]
            more = offsets[-1] + np.cumsum([len(b) for b in encoded], dtype=offsets.dtype)
            offsets = np.concatenate([offsets, more])
            data = np.concatenate([data, np.frombuffer(b"".join(encoded), np.uint8)])
        copied = RawColumns(
            replaced,
            offsets,
            data,
            raw.stats,
            raw.timings,
            raw.string_id_base,
            raw.string_id_floor,
        )
        return Trace(copied, self.meta, self.rank)

    def num_rows(self, table: str) -> int:
        """Rows of a table, read off its raw columns: building the Arrow table to count it
        would cost more than anything a rank summary does (~2 ms a rank)."""
        columns = self._raw.tables[table]
        return len(next(iter(columns.values()))) if columns else 0

    @cached_property
    def stats(self) -> "LoadStats":
        """What the loader counted and skipped: an Arrow table (name, severity, description,
        count, examples) that prints as the counts that are not zero."""
        rows = self._raw.stats
        # The examples column from its flat parts: pa.array on nested values imports pandas.
        flat = [e for r in rows for e in r[4]]
        example = pa.StructArray.from_arrays(
            [
                array_of([o for o, _ in flat], pa.int64()),
                array_of([t for _, t in flat], pa.string()),
            ],
            names=["offset", "text"],
        )
        ends = np.cumsum([0] + [len(r[4]) for r in rows], dtype=np.int32)
        return LoadStats(
            pa.table(
                {
                    "name": array_of([r[0] for r in rows], pa.string()),
                    "severity": array_of([r[1] for r in rows], pa.string()),
                    "description": array_of([r[2] for r in rows], pa.string()),
                    "count": array_of([r[3] for r in rows], pa.int64()),
                    "examples": pa.ListArray.from_arrays(array_of(ends), example),
                }
            )
        )

    def counted(self) -> list[tuple[str, str, str, int]]:
        """(name, severity, description, count) of each loader statistic with a non-zero
        count, in `stats`' order: the rows `stats` prints."""
        return [(r[0], r[1], r[2], int(r[3])) for r in self._raw.stats if r[3]]

    def stat(self, name: str) -> int:
        """The count of one loader statistic (see `stats`)."""
        for r in self._raw.stats:
            if r[0] == name:
                return int(r[3])
        raise KeyError(name)

    # --- names --------------------------------------------------------------------------
    def id_name(self, pid_or_tid: int) -> Optional[str]:
        """The original string of a string pid/tid/flow id ("Spans", "stream 7"), else None
        (an integer id, which the columns hold as written)."""
        raw = self._raw
        if not raw.string_id_floor <= pid_or_tid <= raw.string_id_base:
            return None
        return self.strings[raw.string_id_base - pid_or_tid].as_py()

    @cached_property
    def process_names(self) -> dict[int, str]:
        return self._names("process_name", by_tid=False)

    @cached_property
    def thread_names(self) -> dict[tuple[int, int], str]:
        return self._names("thread_name", by_tid=True)

    def _names(self, kind: str, by_tid: bool) -> dict:
        m = self.meta_events.to_pydict()
        out = {}
        for name, pid, tid, value in zip(m["name"], m["pid"], m["tid"], m["value"]):
            if name == kind and value is not None:
                out[(pid, tid) if by_tid else pid] = value
        return out

    # --- conversions --------------------------------------------------------------------
    def to_arrow(self, table: str = "events") -> pa.Table:
        """One table by name ("events", "kernel_args", ..., "meta" or "meta_events")."""
        name = "meta_events" if table == "meta" else table
        if name not in TABLE_ATTRIBUTES:
            raise ValueError(f"no table {table!r}; tables are {', '.join(TABLE_ATTRIBUTES)}")
        result: pa.Table = getattr(self, name)
        return result

    def to_pandas(self, table: str = "events") -> Any:
        """A pandas DataFrame of one table (pandas is imported only here); integer columns
        with nulls are pandas nullable integers (see hta_fast.interop.to_pandas)."""
        return _interop.to_pandas(self.to_arrow(table))

    def to_polars(self, table: str = "events") -> Any:
        """A Polars DataFrame of one table (Polars is optional)."""
        return _interop.to_polars(self.to_arrow(table))

    def __arrow_c_stream__(self, requested_schema: Optional[object] = None) -> object:
        """The events table as an Arrow C stream (PyCapsule)."""
        return self.events.__arrow_c_stream__(requested_schema)

    def save(self, directory: str | os.PathLike) -> None:
        """Writes this trace as Arrow IPC files plus a manifest (hta_fast.load reads it back;
        see hta_fast.saved_trace)."""
        saved_trace.write(directory, self._raw, self.saved_facts())

    def saved_facts(self) -> dict[str, Any]:
        """What a save keeps beside the columns (see hta_fast.saved_trace)."""
        return {
            "rank": self.rank,
            "header": self.meta.header,
            "json_bytes": self.meta.json_bytes,
            "base_time_ns": self.meta.base_time_ns,
            "path": self.meta.path,
        }

    def __repr__(self) -> str:
        return (
            f"<Trace rank={self.rank} events={len(self._raw.tables['events']['ts'])} "
            f"path={self.meta.path!r}>"
        )


def open_saved(directory: str | os.PathLike) -> Trace:
    """Reads a trace written by Trace.save (tables memory-mapped)."""
    raw, manifest = saved_trace.read(directory)
    meta = TraceMeta.from_header(
        manifest["header"], manifest["path"], manifest["json_bytes"], manifest.get("base_time_ns")
    )
    return Trace(raw, meta, manifest.get("rank"))


class LoadStats:
    """Trace.stats: the loader's counts as an Arrow table (every attribute and item of the
    table works on it: .select, .to_pandas(), ["count"]...), that prints readably: one line
    per count that is not zero, with what it counts."""

    def __init__(self, table: pa.Table):
        self.table = table

    def __getattr__(self, name: str) -> Any:
        return getattr(self.table, name)

    def __getitem__(self, key: Any) -> Any:
        return self.table[key]

    def __len__(self) -> int:
        return self.table.num_rows

    def equals(self, other: Any) -> bool:
        return self.table.equals(other.table if isinstance(other, LoadStats) else other)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, (LoadStats, pa.Table)) and self.equals(other)

    __hash__ = None  # type: ignore[assignment]  # equal by contents, like the table

    def __arrow_c_stream__(self, requested_schema: Optional[object] = None) -> object:
        return self.table.__arrow_c_stream__(requested_schema)

    def __repr__(self) -> str:
        rows = [r for r in self.table.to_pylist() if r["count"]]
        if not rows:
            return "LoadStats: nothing skipped or repaired"
        lines = [f"LoadStats: {len(rows)} of {self.table.num_rows} counts not zero"]
        lines += [
            f"  {r['name']} ({r['severity']}): {r['count']:,} - {r['description']}" for r in rows
        ]
        return "\n".join(lines)
