"""A copy of each rank's trace file with counter tracks ("ph": "C" events) added, for viewing
the queue lengths and copy bandwidths next to the kernels in Perfetto or chrome://tracing.

The original file is copied as a byte stream: the counter events are spliced in at the start
of its traceEvents array and the rest of the file follows unchanged, so memory stays
proportional to the counters, not to the trace. Compression follows the output name (.gz,
.zst; anything else is plain JSON).

Counter events:
  queue length   {"ph": "C", "name": "Queue Length", "pid": <GPU pid>, "tid": <stream>,
                  "id": <stream>, "ts": <us>, "args": {"Queue Length": <n>}}
  bandwidth      {"ph": "C", "name": <copy type, e.g. "Memcpy HtoD">, "pid": <pid>,
                  "ts": <us>, "args": {"Memcpy BW": <GB/s>}}
Timestamps are written in microseconds on the file's own clock (baseTimeNanoseconds taken
back off) with all nanosecond digits, so loading the copy gives the same nanoseconds.
"""

from __future__ import annotations

import gzip
import json
import os
import re
from typing import Any, Optional, Sequence, Union

import numpy as np
import pyarrow as pa

from ..analysis.memory_bw import memory_bandwidth
from ..analysis.queue_length import queue_length
from ..frame import select
from ..frame.result import Result
from ..frame.select import Ranks, Selection, Steps, Streams, Window
from ..trace import Trace
from ..traceset import TraceSet

SERIES = ("queue_length", "memcpy_bandwidth")
CHUNK = 1 << 20
_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')


def trace_with_counters(
    traces: Union[Trace, TraceSet],
    *,
    out_dir: Optional[str] = None,
    suffix: str = "_with_counters",
    series: Sequence[str] = SERIES,
    ranks: Ranks = None,
    steps: Steps = None,
    window: Window = None,
    streams: Streams = None,
    selection: Optional[Selection] = None,
) -> Result:
    """Writes, for every selected rank, its trace file with counter events added.

    out_dir   folder for the copies (default: beside each trace); a copy is named like its
              trace with `suffix` before ".json" (rank0.json.gz -> rank0_with_counters.json.gz)
    series    any of "queue_length" (one track per stream) and "memcpy_bandwidth" (one track
              per copy type)

    Result table: rank, path (the file written), queue_length_events, bandwidth_events.
    """

    unknown = set(series) - set(SERIES)
    if unknown:
        raise ValueError(f"unknown series {sorted(unknown)}; choose from {SERIES}")
    sel = select.selection_of(selection, ranks, steps, window, streams)
    rows: dict[str, list[Any]] = {
        "rank": [],
        "path": [],
        "queue_length_events": [],
        "bandwidth_events": [],
    }
    for rank, trace, _ in select.each_rank(traces, sel):
        one = Selection(
            ranks=[rank],
            steps=sel.steps,
            window=sel.window,
            streams=sel.streams,
            before_last_step=sel.before_last_step,
        )
        q = queue_length(traces, selection=one).table if "queue_length" in series else None
        b = memory_bandwidth(traces, selection=one).table if "memcpy_bandwidth" in series else None
        path = output_path(trace, out_dir, suffix)
        nq, nb = write_counters(trace, path, queue=q, bandwidth=b)
        rows["rank"].append(rank)
        rows["path"].append(path)
        rows["queue_length_events"].append(nq)
        rows["bandwidth_events"].append(nb)
    table = pa.table(
        {
            "rank": pa.array(rows["rank"], pa.int64()),
            "path": pa.array(rows["path"], pa.string()),
            "queue_length_events": pa.array(rows["queue_length_events"], pa.int64()),
            "bandwidth_events": pa.array(rows["bandwidth_events"], pa.int64()),
        }
    )
    return Result("trace_with_counters", table, params={"series": tuple(series), "selection": sel})


def output_path(trace: Trace, out_dir: Optional[str], suffix: str) -> str:
    src = trace.meta.path
    if not src or os.path.isdir(src):
        raise ValueError("this trace was not loaded from a trace file; there is nothing to copy")
    base = os.path.basename(src)
    i = base.rfind(".json")
    name = base[:i] + suffix + base[i:] if i >= 0 else base + suffix + ".json"
    return os.path.join(out_dir if out_dir is not None else os.path.dirname(src), name)


def us_text(ns: np.ndarray) -> list[str]:
    """Nanoseconds as exact decimal microseconds ("12.345", "-0.001", "7")."""
    ns = np.asarray(ns, np.int64)
    sign = np.where(ns < 0, "-", "")
    a = np.abs(ns)
    whole, frac = a // 1000, a % 1000
    return [
        f"{s}{w}" if f == 0 else f"{s}{w}.{f:03d}"
        for s, w, f in zip(sign.tolist(), whole.tolist(), frac.tolist())
    ]


def _pid_json(trace: Trace, pids: np.ndarray) -> list[str]:
    out = []
    cache: dict[int, str] = {}
    for p in pids.tolist():
        if p not in cache:
            name = trace.id_name(p) if p < 0 else None
            cache[p] = json.dumps(name) if name is not None else str(p)
        out.append(cache[p])
    return out


def _number(v: float) -> str:
    return repr(int(v)) if float(v).is_integer() else repr(float(v))


def counter_events(
    trace: Trace,
    queue: Optional[pa.Table] = None,
    bandwidth: Optional[pa.Table] = None,
    include_id: bool = True,
) -> tuple[list[str], int, int]:
    """JSON texts of the counter events for the series tables of one rank (the main tables of
    queue_length and memory_bandwidth), with how many of each."""
    base = trace.meta.base_time_ns
    out: list[str] = []
    nq = nb = 0
    if queue is not None and queue.num_rows:
        ts = us_text(queue.column("ts").to_numpy() - base)
        pid = _pid_json(trace, queue.column("pid").to_numpy())
        stream = queue.column("stream").to_numpy().tolist()
        value = queue.column("queue_length").to_numpy().tolist()
        for p, s, t, v in zip(pid, stream, ts, value):
            ident = f', "id": {s}' if include_id else ""
            out.append(
                f'{{"ph": "C", "name": "Queue Length", "pid": {p}, "tid": {s}{ident}, '
                f'"ts": {t}, "args": {{"Queue Length": {v}}}}}'
            )
        nq = queue.num_rows
    if bandwidth is not None and bandwidth.num_rows:
        ts = us_text(bandwidth.column("ts").to_numpy() - base)
        pid = _pid_json(trace, bandwidth.column("pid").to_numpy())
        names = [json.dumps(n) for n in bandwidth.column("name").to_pylist()]
        value = bandwidth.column("memory_bw_gbps").to_numpy().tolist()
        for p, n, t, v in zip(pid, names, ts, value):
            out.append(
                f'{{"ph": "C", "name": {n}, "pid": {p}, "ts": {t}, '
                f'"args": {{"Memcpy BW": {_number(v)}}}}}'
            )
        nb = bandwidth.num_rows
    return out, nq, nb


def write_counters(
    trace: Trace, path: str, queue: Optional[pa.Table] = None, bandwidth: Optional[pa.Table] = None
) -> tuple[int, int]:
    """Copies trace's file to path with the counter events spliced into traceEvents."""
    events, nq, nb = counter_events(trace, queue, bandwidth)
    src = trace.meta.path
    if src is None:
        raise ValueError("the trace was loaded from bytes: there is no file to copy")
    if os.path.abspath(src) == os.path.abspath(path):
        raise ValueError(f"the copy would overwrite its trace: {path}")
    with _open(src, "rb") as fin, _open(path, "wb") as fout:
        _splice(fin, fout, events)
    return nq, nb


def _open(path: str, mode: str) -> Any:
    if path.endswith(".gz"):
        return gzip.open(path, mode, compresslevel=6 if "w" in mode else 9)
    if path.endswith(".zst"):
        try:
            import zstandard
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise RuntimeError("reading or writing .zst needs the zstandard package") from exc
        return zstandard.open(path, mode)
    return open(path, mode)


def _splice(fin: Any, fout: Any, events: list[str]) -> None:
    """Copies fin to fout, inserting `events` right after the "traceEvents": [ that holds
    the events (the first such key outside a string)."""
    head = b""
    found = None
    while found is None:
        chunk = fin.read(CHUNK)
        if not chunk:
            raise ValueError("the trace file has no traceEvents array")
        head += chunk
        found = _find_key(head)
    pos = found
    # Is the array empty? Look at the first non-blank byte after "[".
    rest = head[pos:]
    while not rest.strip():
        chunk = fin.read(CHUNK)
        if not chunk:
            raise ValueError("the trace file ends inside traceEvents")
        rest += chunk
    empty = rest.lstrip()[:1] == b"]"
    fout.write(head[:pos])
    if events:
        fout.write(b"\n")
        for i in range(0, len(events), 4096):
            fout.write((",\n".join(events[i : i + 4096])).encode())
            if i + 4096 < len(events):
                fout.write(b",\n")
        if not empty:
            fout.write(b",")
    fout.write(rest)
    while True:
        chunk = fin.read(CHUNK)
        if not chunk:
            break
        fout.write(chunk)


def _find_key(buf: bytes) -> Optional[int]:
    """Offset just past the "[" of the top-level "traceEvents" key in buf, or None when buf
    does not (yet) hold it. Matches inside strings are skipped."""
    for m in _KEY.finditer(buf):
        if not _inside_string(buf, m.start()):
            return m.end()
    return None


def _inside_string(buf: bytes, pos: int) -> bool:
    """Whether buf[pos] lies inside a JSON string (counting unescaped quotes before it)."""
    n = 0
    i = buf.find(b'"', 0, pos)
    while 0 <= i < pos:
        back = 0
        j = i - 1
        while j >= 0 and buf[j] == 0x5C:
            back += 1
            j -= 1
        if back % 2 == 0:
            n += 1
        i = buf.find(b'"', i + 1, pos)
    return n % 2 == 1
