"""Broken traces built byte by byte, and what every broken-input test checks of the
error (tests/loading/test_bad_input*.py)."""

from __future__ import annotations

import json

import pytest

import hta_fast
from hta_fast import TraceFormatError

CONFIGS = [
    dict(chunk_size=0, threads=1),
    dict(chunk_size=0, threads=2),
    dict(chunk_size=256, threads=1),
    dict(chunk_size=256, threads=2),
]


def ev_text(i, **extra):
    """One plain complete event as compact JSON text."""
    e = {"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 1, "tid": 1, "ts": i, "dur": 1}
    e.update(extra)
    return json.dumps(e, separators=(",", ":"))


class Doc:
    """A trace assembled from event texts, remembering where each event starts and ends."""

    def __init__(
        self,
        events: list[bytes],
        head=b'{"schemaVersion":1,"traceEvents":[',
        tail=b'],"traceName":"x"}',
        sep=b",\n  ",
    ):
        self.events = events
        parts, self.starts, self.ends = [head], [], []
        pos = len(head)
        for k, e in enumerate(events):
            if k:
                parts.append(sep)
                pos += len(sep)
            self.starts.append(pos)
            parts.append(e)
            pos += len(e)
            self.ends.append(pos)
        self.array_end = pos
        parts.append(tail)
        self.text = b"".join(parts)


def examples(t, stat: str) -> list[dict]:
    rows = t.stats.to_pylist()
    return next(r["examples"] for r in rows if r["name"] == stat)


def load_error(source, **kw) -> TraceFormatError:
    with pytest.raises(TraceFormatError) as ei:
        hta_fast.load(source, **kw)
    e = ei.value
    assert isinstance(e, ValueError)
    assert e.reason and str(e.reason) in str(e)
    return e
