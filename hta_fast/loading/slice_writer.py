"""Writes a time window of one rank as Chrome-trace JSON, the profiler's own format: a step
of a trace too big for a browser then opens in Perfetto UI or chrome://tracing, and loads
back into hta_fast or the reference tool.

What is written is what the loader keeps (docs/format.md): complete events with their
name, cat, pid, tid (string ids as their strings), ts and dur in µs with three decimals
(absolute: the loaded ts already holds baseTimeNanoseconds, so none is written), and the
arguments kept as columns under the names Kineto writes (events, kernel_args, op_args,
comm_args, sync_args); flows, counters and instants of the window; every metadata event;
the header members the loader keeps.

A window is [lo, hi) in ns on the events' clock; slice_window says which rows it keeps.

Text is built column by column with pyarrow compute (slice_text), a batch of rows at a
time, and streamed out (through gzip when the path ends in .gz): no Python object per event,
memory of the order of a batch.
"""

from __future__ import annotations

import dataclasses
import gzip
import io
import json
import os
from pathlib import Path
from typing import Callable, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import _arrow, _core
from ..trace import Trace
from .slice_text import (
    EVENT_ARGS,
    INSTANT_ARGS,
    SIDE_ARGS,
    TEXT,
    always,
    args_members,
    args_object,
    by_distinct,
    char_texts,
    constant,
    id_texts,
    join,
    member,
    micros,
    number_texts,
    pool_strings,
    string_texts,
    texts,
    where,
)
from .slice_window import Window, flow_rows, rows_in, steps_window, trace_start, window_rows

__all__ = [
    "Window",
    "SliceCounts",
    "trace_start",
    "steps_window",
    "window_rows",
    "write_slice",
    "write_slice_pftrace",
]

# A slice is a view to open now, not an archive: gzip level 1 writes several times faster
# than torch's level 9, for files about a third larger.
GZIP_LEVEL = 1
# Rows turned into text at once: large enough that the compute calls cost little per row,
# small enough that a batch's text stays some tens of MB.
BATCH_ROWS = 1 << 16


@dataclasses.dataclass(frozen=True)
class SliceCounts:
    """What one slice holds, by phase."""

    events: int
    flows: int
    counters: int
    instants: int
    meta: int


# --- the lines of each phase ----------------------------------------------------------------
class _EventLines:
    """The complete events of a window as lines of JSON text, a batch of rows at a time,
    with the arguments their side tables hold."""

    def __init__(self, trace: Trace, rows: np.ndarray):
        self.trace, self.rows = trace, rows
        kept = np.zeros(trace.num_rows("events"), bool)
        kept[rows] = True
        self.kept = kept
        # For each row of the window, its row in each side table, or -1.
        self.side = {table: self._side_rows(table) for table in SIDE_ARGS}

    def _side_rows(self, table: str) -> np.ndarray:
        owner = self.trace.column(table, "row")
        hits = np.flatnonzero((owner >= 0) & self.kept[np.maximum(owner, 0)])
        out = np.full(len(self.rows), -1, np.int64)
        out[np.searchsorted(self.rows, owner[hits])] = hits
        return out

    def lines(self, start: int, stop: int) -> pa.Array:
        trace, rows = self.trace, self.rows[start:stop]

        def column(name: str) -> np.ndarray:
            return trace.column("events", name)[rows]

        args = args_members(trace, "events", EVENT_ARGS, rows)
        args += [self._side_args(table, start, stop) for table in SIDE_ARGS]
        return join(
            [
                constant(',\n{"ph":"X"'),
                member("cat", string_texts(trace, column("cat"))),
                member("name", string_texts(trace, column("name"))),
                *always("pid", id_texts(trace, column("pid"))),
                *always("tid", id_texts(trace, column("tid"))),
                *always("ts", micros(column("ts"))),
                *always("dur", micros(column("dur"))),
                *args_object(args),
                constant("}"),
            ]
        )

    def _side_args(self, table: str, start: int, stop: int) -> pa.Array:
        """The members of one side table for rows start:stop, null for rows it has none of."""
        side = self.side[table][start:stop]
        have = side >= 0
        members = args_members(self.trace, table, SIDE_ARGS[table], side[have])
        if not members:
            return pa.nulls(stop - start, TEXT)
        at = np.cumsum(have) - 1
        return join(members).take(_arrow.masked(np.maximum(at, 0), ~have))


def _flow_lines(trace: Trace, rows: np.ndarray) -> pa.Array:
    def column(name: str) -> np.ndarray:
        return trace.column("flows", name)[rows]

    bp = where(column("binds_enclosing") == 1, constant('"e"'))
    return join(
        [
            constant(',\n{"ph":'),
            char_texts(column("phase")),
            *always("id", id_texts(trace, column("id"))),
            *always("pid", id_texts(trace, column("pid"))),
            *always("tid", id_texts(trace, column("tid"))),
            *always("ts", micros(column("ts"))),
            member("cat", string_texts(trace, column("cat"))),
            member("name", string_texts(trace, column("name"))),
            member("bp", bp),
            constant("}"),
        ]
    )


def _counter_lines(trace: Trace, rows: np.ndarray) -> pa.Array:
    def column(name: str) -> np.ndarray:
        return trace.column("counters", name)[rows]

    value = pc.binary_join_element_wise(
        string_texts(trace, column("series")), number_texts(column("value")), constant(":")
    )
    return join(
        [
            constant(',\n{"ph":"C"'),
            member("name", string_texts(trace, column("name"))),
            *always("pid", id_texts(trace, column("pid"))),
            *always("tid", id_texts(trace, column("tid"))),
            *always("ts", micros(column("ts"))),
            constant(',"args":{'),
            value,
            constant("}}"),
        ]
    )


def _instant_lines(trace: Trace, rows: np.ndarray) -> pa.Array:
    def column(name: str) -> np.ndarray:
        return trace.column("instants", name)[rows]

    return join(
        [
            constant(',\n{"ph":"i"'),
            member("s", char_texts(column("scope"))),
            member("cat", string_texts(trace, column("cat"))),
            member("name", string_texts(trace, column("name"))),
            *always("pid", id_texts(trace, column("pid"))),
            *always("tid", id_texts(trace, column("tid"))),
            *always("ts", micros(column("ts"))),
            *args_object(args_members(trace, "instants", INSTANT_ARGS, rows)),
            constant("}"),
        ]
    )


def _meta_lines(trace: Trace, rows: np.ndarray, ts_us: str) -> pa.Array:
    """Metadata events (process and thread names, labels, sort indexes), each at ts_us: the
    viewers read them whatever their time, and a time inside the window keeps it tight."""

    def column(name: str) -> np.ndarray:
        return trace.column("meta", name)[rows]

    names = column("name")
    # process_labels carries its value as "labels", the others as "name"; a value is written
    # as a string, as viewers read names (the loader keeps its text either way).
    key = by_distinct(
        names,
        names < 0,
        lambda u: texts(
            [',"labels":' if s.endswith("_labels") else ',"name":' for s in pool_strings(trace, u)]
        ),
    )
    value = pc.binary_join_element_wise(
        pc.coalesce(key, constant(',"name":')), string_texts(trace, column("value")), constant("")
    )
    args = [value, member("sort_index", number_texts(column("sort_index")))]
    return join(
        [
            constant(',\n{"ph":"M"'),
            member("name", string_texts(trace, names)),
            *always("pid", id_texts(trace, column("pid"))),
            *always("tid", id_texts(trace, column("tid"))),
            constant(f',"ts":{ts_us}'),
            *args_object(args),
            constant("}"),
        ]
    )


# --- the file -------------------------------------------------------------------------------
class _EventSink:
    """The items of traceEvents into a binary stream, comma-separated: every line starts with
    ',\\n', and the first line of the file is written without its comma."""

    def __init__(self, stream: io.BufferedIOBase):
        self.stream = stream
        self.count = 0

    def write(self, lines: pa.Array) -> None:
        if not len(lines):
            return
        offsets = np.frombuffer(lines.buffers()[1], np.int64)[
            lines.offset : lines.offset + len(lines) + 1
        ]
        data = memoryview(lines.buffers()[2])[offsets[0] : offsets[-1]]
        self.stream.write(data[1:] if self.count == 0 else data)
        self.count += len(lines)


def _in_batches(sink: _EventSink, count: int, lines_of: Callable[[int, int], pa.Array]) -> None:
    for start in range(0, count, BATCH_ROWS):
        stop = min(start + BATCH_ROWS, count)
        lines = lines_of(start, stop)
        if len(lines) != stop - start:  # a row lost on the way would shift every later one
            raise AssertionError(f"{len(lines)} lines built for {stop - start} rows")
        sink.write(lines)


def _header_text(trace: Trace) -> bytes:
    """The header members the loader keeps, up to the opening of traceEvents. The timestamps
    written are absolute, so baseTimeNanoseconds is left out."""
    header = {
        k: v
        for k, v in trace.meta.header.items()
        if k not in ("baseTimeNanoseconds", "traceEvents")
    }
    members = json.dumps(header, allow_nan=False, default=str)[1:-1]
    return ("{" + members + (", " if members else "") + '"traceEvents": [').encode()


def _open(path: Path, temporary: Path) -> tuple[io.BufferedWriter, io.BufferedIOBase]:
    """(the file, the stream to write into it): gzip when the name ends in .gz."""
    raw = open(temporary, "wb")
    if path.name.endswith(".gz"):
        name = path.name[: -len(".gz")]
        return raw, gzip.GzipFile(
            filename=name, mode="wb", fileobj=raw, compresslevel=GZIP_LEVEL, mtime=0
        )
    return raw, raw


def write_slice(
    trace: Trace,
    path: str | os.PathLike,
    window: Window,
    rows: Optional[np.ndarray] = None,
) -> SliceCounts:
    """Writes the events of `window` ([lo, hi) ns on the events' clock) of one rank to
    `path` as Chrome-trace JSON (gzip when it ends in .gz); `rows`: the window's event rows
    when already worked out (window_rows). The file appears whole or not at all (written
    beside it, then renamed). A window without events raises ValueError."""
    lo, hi = window
    if hi <= lo:
        raise ValueError(f"the window [{lo}, {hi}) ns ends before it starts")
    rows = window_rows(trace, window) if rows is None else rows
    if not len(rows):
        raise ValueError(f"rank {trace.rank}: no event starts in the window [{lo}, {hi}) ns")
    events = _EventLines(trace, rows)
    flows = flow_rows(trace, window, events.kept)
    counters, instants = rows_in(trace, "counters", window), rows_in(trace, "instants", window)
    meta = np.arange(trace.num_rows("meta"))
    ts_us = micros(np.array([lo], np.int64))[0].as_py()

    target = Path(path)
    temporary = target.with_name(target.name + ".partial")
    raw, stream = _open(target, temporary)
    try:
        with raw:
            stream.write(_header_text(trace))
            sink = _EventSink(stream)
            _in_batches(sink, len(meta), lambda a, b: _meta_lines(trace, meta[a:b], ts_us))
            _in_batches(sink, len(rows), events.lines)
            _in_batches(sink, len(flows), lambda a, b: _flow_lines(trace, flows[a:b]))
            _in_batches(sink, len(counters), lambda a, b: _counter_lines(trace, counters[a:b]))
            _in_batches(sink, len(instants), lambda a, b: _instant_lines(trace, instants[a:b]))
            stream.write(b"\n]}\n")
            if stream is not raw:
                stream.close()
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return SliceCounts(len(rows), len(flows), len(counters), len(instants), len(meta))


def write_slice_pftrace(
    trace: Trace,
    path: str | os.PathLike,
    window: Window,
    rows: Optional[np.ndarray] = None,
) -> tuple[SliceCounts, dict[str, int]]:
    """The slice write_slice writes, as a Perfetto protobuf trace (gzip when `path` ends in
    .gz), which Perfetto UI opens past the size where it gives up on JSON: the JSON is
    written beside `path`, then rewritten by _core.json_to_pftrace. Returns the counts and
    what the protobuf trace could not carry ({reason: events left out}): events and metadata
    of string pids or tids, flow ends where no slice of their thread begins."""
    target = Path(path)
    text = target.with_name(target.name + ".json.partial")
    temporary = target.with_name(target.name + ".partial")
    try:
        counts = write_slice(trace, text, window, rows)
        data, left_out = _core.json_to_pftrace(text.read_bytes())
        text.unlink()
        with open(temporary, "wb") as raw:
            if target.name.endswith(".gz"):
                name = target.name[: -len(".gz")]
                with gzip.GzipFile(
                    filename=name, mode="wb", fileobj=raw, compresslevel=GZIP_LEVEL, mtime=0
                ) as stream:
                    stream.write(data)
            else:
                raw.write(data)
        os.replace(temporary, target)
    except BaseException:
        text.unlink(missing_ok=True)
        temporary.unlink(missing_ok=True)
        raise
    return counts, left_out
