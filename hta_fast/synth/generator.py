#!/usr/bin/env python3
"""Generate large PyTorch profiler (Kineto) traces from a real one, for benchmarks and tests.

A real trace (the *base*) is read once. Its events are written again and again, each repetition
shifted in time by the span of the base and with every identifier that links events shifted by
the range of that identifier, so links stay unique and paired:

* ``args.correlation``, ``args.wait_on_cuda_event_record_corr_id`` and the ``id`` of flow events
  (``ph`` s/f/t) share one offset: in modern traces a launch's correlation and its ``ac2g`` flow id
  are the same number and must stay so;
* ``External id``, ``Sequence number``, ``Python id``/``Python parent id``, ``Ev Idx``,
  ``Record function id`` and ``Profiler Event Index`` each have their own offset;
* ``ProfilerStep#N`` names are renumbered so steps keep counting up.

Metadata (``ph`` M), the profiler's own span (``cat`` Trace) and its global instants are written
once; the span and the window-end instant are stretched to cover all repetitions. Header keys are
kept; ``distributedInfo`` gets the output rank and world size. Timestamps keep their text form:
integer microseconds stay integers, fractional ones keep their exact decimals (the fraction never
changes because every shift is a whole number of microseconds).

Speed: each event is serialised once into a %-format template whose ``%d`` placeholders are the
numbers that change; a repetition is one ``template % values`` per chunk of ~1 MB. Output is
streamed, so memory stays near the size of the base trace whatever the output size.

Sizes are of the JSON text, before any compression, with 1 MB = 10**6 bytes. The last repetition
may be partial: it then holds a prefix of the base by time, closed over correlations and flow ids
so it has no half links.

    python benchmarks/gen_trace.py --size-mb 1000 --ranks 1 --out DIR \
        [--gzip] [--layout native|indent|oneline] [--seed N] [--base TRACEFILE] [--verify] \
        [--straggler RANK:FACTOR]... [--slow-link RANK:FACTOR]... [--jitter PCT] [-q]

Without --straggler, --slow-link and --jitter every rank is the same program with its clock
skewed; with them ranks differ as hta_fast.synth.variation describes.
"""

from __future__ import annotations

import argparse
import collections
import decimal
import functools
import gzip
import io
import json
import math
import random
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import sync_calls
from ..schema import KernelClass
from .variation import (
    BaseTimes,
    RepSchedule,
    Structure,
    Variation,
    event_deltas,
    kernel_classes,
    parse_rank_factor,
    schedule,
)

# hta_fast/synth/generator.py -> the repository root; the real traces sit beside it.
REPO_ROOT = Path(__file__).resolve().parents[2]
TRACES_DIR = REPO_ROOT.parent / "shared" / "traces"
DEFAULT_BASE = TRACES_DIR / "hta" / "trace_diff" / "control" / "control.json.gz"
# Fractional (ns-resolution) timestamps with absolute epoch times, and a trace whose float
# timestamps are relative to baseTimeNanoseconds; both work as --base.
NS_BASE = (
    TRACES_DIR / "hta" / "ns_resolution_trace" / "rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
)
RELATIVE_NS_BASE = TRACES_DIR / "hta" / "nccl_parser_config" / "nccl_data.json.gz"

LAYOUTS = ("native", "indent", "oneline")
MB = 10**6
CHUNK_BYTES = 1 << 20
VERIFY_LIMIT_MB = 400  # --verify reads the output back with json: keep that to small files

# Integer args whose values identify something. Keys of one family share an offset so that equal
# values stay equal after shifting (a launch's correlation and the flow id naming it).
ARG_FAMILIES = {
    "correlation": "link",
    "wait_on_cuda_event_record_corr_id": "link",
    "External id": "external",
    "external id": "external",
    "Sequence number": "sequence",
    "Python id": "python",
    "Python parent id": "python",
    "Ev Idx": "ev_idx",
    "Record function id": "record_function",
    "Profiler Event Index": "event_index",
}
FLOW_PHASES = ("s", "f", "t")
# Families whose 0 is a real value (an index); in the others 0 and -1 mean "none" and stay put.
ZERO_BASED_FAMILIES = {"sequence", "ev_idx", "record_function", "event_index"}
FAMILIES = (
    "time",
    "step",
    "link",
    "external",
    "sequence",
    "python",
    "ev_idx",
    "record_function",
    "event_index",
    "dur",  # a duration: never shifted, only stretched by a Variation
)
FAMILY_INDEX = {name: i for i, name in enumerate(FAMILIES)}

STEP_RE = re.compile(r"ProfilerStep#(\d+)\Z")
# Keys the native (torch/Kineto) writer puts after traceEvents.
NATIVE_TAIL_KEYS = ("traceName", "displayTimeUnit", "baseTimeNanoseconds")
LAUNCH_CATS = ("cuda_runtime", "cuda_driver", "Runtime")
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset")
# What the reference tool uses to find a file's rank (first match in the text).
REFERENCE_RANK_RE = re.compile(r'"rank":\s+(\d+)')


# ----------------------------------------------------------------------------------------------
# Reading the base trace
# ----------------------------------------------------------------------------------------------


@dataclass
class BaseTrace:
    header: list[tuple[str, Any]]  # (key, value) in file order; ("traceEvents", None) marks events
    prologue: list[dict]  # once-only events before the first repeated one
    repeated: list[dict]  # the events of one repetition, in file order
    epilogue: list[dict]  # the other once-only events


def _open_text(path: Path) -> str:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return raw.decode("utf-8")


def _is_once_only(event: dict) -> bool:
    """Metadata, the profiler's own span and its global instants describe the whole window."""
    ph = event.get("ph")
    return ph == "M" or event.get("cat") == "Trace" or (ph in ("i", "I") and event.get("s") == "g")


def load_base(path: Path) -> BaseTrace:
    # Decimal keeps fractional numbers exactly as written (a double cannot hold 19 digits).
    doc = json.loads(_open_text(path), parse_float=decimal.Decimal)
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise ValueError(f"{path}: not a Chrome trace object with a traceEvents list")
    header = [(k, (None if k == "traceEvents" else v)) for k, v in doc.items()]
    prologue: list[dict] = []
    repeated: list[dict] = []
    epilogue: list[dict] = []
    for event in doc["traceEvents"]:
        if not isinstance(event, dict):
            continue
        if _is_once_only(event):
            (epilogue if repeated else prologue).append(event)
        else:
            repeated.append(event)
    if not repeated:
        raise ValueError(f"{path}: no events to repeat")
    return BaseTrace(header, prologue, repeated, epilogue)


# ----------------------------------------------------------------------------------------------
# Serialisation with placeholders
# ----------------------------------------------------------------------------------------------


class _Num:
    """An integer that changes per repetition; rendered as %d followed by a fixed suffix."""

    __slots__ = ("family", "value", "suffix")

    def __init__(self, family: str, value: int, suffix: str = "") -> None:
        self.family, self.value, self.suffix = family, value, suffix


class _StepName:
    """A "ProfilerStep#N" name whose N changes per repetition."""

    __slots__ = ("num",)

    def __init__(self, number: int) -> None:
        self.num = _Num("step", number)


class _Encoder:
    """json.dumps-compatible text, except that placeholders become %d and (in template mode)
    literal % signs are doubled. indent=None gives one line with ", " and ": " separators."""

    def __init__(self, template: bool) -> None:
        self.template = template
        self.slots: list[_Num] = []
        self._strings: dict[str, str] = {}

    def string(self, s: str) -> str:
        text = self._strings.get(s)
        if text is None:
            text = json.dumps(s)
            if self.template:
                text = text.replace("%", "%%")
            if len(self._strings) < 200_000:
                self._strings[s] = text
        return text

    def encode(self, value: Any, indent: int | None = None, level: int = 0) -> str:
        out: list[str] = []
        self._encode(value, out, indent, level)
        return "".join(out)

    def _encode(self, v: Any, out: list[str], indent: int | None, level: int) -> None:
        if isinstance(v, str):
            out.append(self.string(v))
        elif isinstance(v, _Num):
            self.slots.append(v)
            out.append("%d" + v.suffix)
        elif isinstance(v, _StepName):
            self.slots.append(v.num)
            out.append('"ProfilerStep#%d"')
        elif v is None:
            out.append("null")
        elif v is True:
            out.append("true")
        elif v is False:
            out.append("false")
        elif isinstance(v, int):
            out.append(str(v))
        elif isinstance(v, decimal.Decimal):
            out.append(str(v))
        elif isinstance(v, float):  # only NaN/Infinity constants reach here
            out.append(json.dumps(v))
        elif isinstance(v, dict):
            self._container(list(v.items()), out, indent, level, "{", "}", True)
        elif isinstance(v, (list, tuple)):
            self._container(list(v), out, indent, level, "[", "]", False)
        else:
            raise TypeError(f"cannot serialise {type(v).__name__}")

    def _container(
        self,
        items: list,
        out: list[str],
        indent: int | None,
        level: int,
        open_: str,
        close: str,
        is_map: bool,
    ) -> None:
        if not items:
            out.append(open_ + close)
            return
        if indent is None:
            inner_sep, first_pad, last_pad = ", ", "", ""
        else:
            pad = "\n" + " " * (indent * (level + 1))
            inner_sep, first_pad, last_pad = "," + pad, pad, "\n" + " " * (indent * level)
        out.append(open_ + first_pad)
        for i, item in enumerate(items):
            if i:
                out.append(inner_sep)
            if is_map:
                key, item = item
                out.append(self.string(key) + ": ")
            self._encode(item, out, indent, level + 1)
        out.append(last_pad + close)


# ----------------------------------------------------------------------------------------------
# Which numbers move, and by how much
# ----------------------------------------------------------------------------------------------


def _time_parts(value: Any) -> tuple[int, str] | None:
    """Split a timestamp into (whole microseconds, literal fraction text)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value, ""
    if isinstance(value, decimal.Decimal) and value.is_finite():
        text = format(value, "f")
        whole, dot, frac = text.partition(".")
        if value < 0 and dot:
            # "-1.500" shifted by whole microseconds does not keep its fraction; the writer
            # clamps negative times to 0, so this only happens on hand-made input.
            raise ValueError(f"negative fractional timestamp {text} is not supported")
        return int(whole), dot + frac
    return None


def _shiftable(family: str, value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int):
        return False
    return value >= 0 if family in ZERO_BASED_FAMILIES else value > 0


def _with_slots(event: dict) -> dict:
    """A copy of a repeated event whose moving numbers are placeholders."""
    out = dict(event)
    ts = _time_parts(event.get("ts"))
    if ts is not None:
        out["ts"] = _Num("time", ts[0], ts[1])
    dur = event.get("dur")
    if not (isinstance(dur, decimal.Decimal) and dur < 0):  # _time_parts refuses those
        dur_parts = _time_parts(dur)
        if dur_parts is not None:
            out["dur"] = _Num("dur", dur_parts[0], dur_parts[1])
    if event.get("ph") in FLOW_PHASES and _shiftable("link", event.get("id")):
        out["id"] = _Num("link", event["id"])
    name = event.get("name")
    if isinstance(name, str):
        m = STEP_RE.match(name)
        if m:
            out["name"] = _StepName(int(m.group(1)))
    args = event.get("args")
    if isinstance(args, dict):
        new_args = None
        for key, family in ARG_FAMILIES.items():
            value = args.get(key)
            if value is not None and _shiftable(family, value):
                if new_args is None:
                    new_args = dict(args)
                new_args[key] = _Num(family, value)
        if new_args is not None:
            out["args"] = new_args
    return out


def _link_key(event: dict) -> int | None:
    """The correlation (or flow id) that ties this event to others, if any."""
    args = event.get("args")
    if isinstance(args, dict) and _shiftable("link", args.get("correlation")):
        return args["correlation"]
    if event.get("ph") in FLOW_PHASES and _shiftable("link", event.get("id")):
        return event["id"]
    return None


def _time_us(value: Any) -> decimal.Decimal | None:
    if isinstance(value, bool) or not isinstance(value, (int, decimal.Decimal)):
        return None
    return decimal.Decimal(value)


@dataclass
class Shifts:
    period_us: int  # time between two repetitions
    span: dict[str, int]  # per family: how far ids move per repetition

    def offsets(self, rep: int, skew_us: int) -> list[int]:
        offs = [rep * self.span.get(name, 0) for name in FAMILIES]
        offs[FAMILY_INDEX["time"]] = rep * self.period_us + skew_us
        return offs


def compute_shifts(events: list[dict]) -> Shifts:
    lo: dict[str, int] = {}
    hi: dict[str, int] = {}

    def see(family: str, v: int) -> None:
        lo[family] = min(lo.get(family, v), v)
        hi[family] = max(hi.get(family, v), v)

    start: decimal.Decimal | None = None
    end: decimal.Decimal | None = None
    for ev in events:
        ts = _time_us(ev.get("ts"))
        if ts is not None:
            dur = _time_us(ev.get("dur")) or decimal.Decimal(0)
            stop = ts + max(dur, decimal.Decimal(0))
            start = ts if start is None else min(start, ts)
            end = stop if end is None else max(end, stop)
        if ev.get("ph") in FLOW_PHASES and _shiftable("link", ev.get("id")):
            see("link", ev["id"])
        m = STEP_RE.match(ev.get("name", "")) if isinstance(ev.get("name"), str) else None
        if m:
            see("step", int(m.group(1)))
        args = ev.get("args")
        if isinstance(args, dict):
            for key, family in ARG_FAMILIES.items():
                value = args.get(key)
                if value is not None and _shiftable(family, value):
                    see(family, value)
    period = 1 if start is None or end is None else max(1, math.ceil(end - start))
    return Shifts(period, {f: hi[f] - lo[f] + 1 for f in lo})


# ----------------------------------------------------------------------------------------------
# Layouts
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    name: str
    event_indent: int | None  # indent inside one event (None: the event is one line)
    event_level: int
    sep: str  # between events
    open_events: str  # after '"traceEvents": '
    close_events: str

    @staticmethod
    def get(name: str) -> Layout:
        if name == "native":
            return Layout(name, None, 0, ",\n  ", "[\n  ", "\n  ]")
        if name == "indent":
            return Layout(name, 2, 2, ",\n    ", "[\n    ", "\n  ]")
        if name == "oneline":
            return Layout(name, None, 0, ", ", "[", "]")
        raise ValueError(f"unknown layout {name!r}; expected one of {', '.join(LAYOUTS)}")


# ----------------------------------------------------------------------------------------------
# Templates
# ----------------------------------------------------------------------------------------------


@dataclass
class EventTemplates:
    """Each repeated event serialised once: its %-format text and its placeholders' base values
    and families (flattened; event i owns slots slot_start[i]:slot_start[i + 1])."""

    texts: list[str]
    slot_start: list[int]
    bases: list[int]
    families: list[int]
    lengths: list[int]  # bytes each event takes in the first repetition, separator included


def compile_events(events: list[dict], layout: Layout) -> EventTemplates:
    enc = _Encoder(template=True)
    texts, slot_start, lengths = [], [0], []
    sep_len = len(layout.sep)
    for ev in events:
        first = len(enc.slots)
        text = enc.encode(_with_slots(ev), layout.event_indent, layout.event_level)
        texts.append(text)
        slot_start.append(len(enc.slots))
        lengths.append(len(text % tuple(s.value for s in enc.slots[first:])) + sep_len)
    return EventTemplates(
        texts,
        slot_start,
        [s.value for s in enc.slots],
        [FAMILY_INDEX[s.family] for s in enc.slots],
        lengths,
    )


@dataclass
class _Chunk:
    fmt: str
    bases: list[int]
    families: list[int]
    events: list[int]  # the base event each slot belongs to
    _arrays: tuple[np.ndarray, ...] | None = None

    def arrays(self) -> tuple[np.ndarray, ...]:
        """bases, families, and the slots that are starts and durations with their events:
        what a varied rendering needs, built on first use."""
        if self._arrays is None:
            fam = np.array(self.families, np.int64)
            ev = np.array(self.events, np.int64)
            ts_slots = np.flatnonzero(fam == FAMILY_INDEX["time"])
            dur_slots = np.flatnonzero(fam == FAMILY_INDEX["dur"])
            self._arrays = (
                np.array(self.bases, np.int64),
                fam,
                ts_slots,
                ev[ts_slots],
                dur_slots,
                ev[dur_slots],
            )
        return self._arrays


@dataclass
class Template:
    """A repetition (or part of one) as ~1 MB %-format chunks of events joined by the layout's
    separator; chunks must be joined by that separator too."""

    chunks: list[_Chunk]
    n_events: int

    def render(self, offsets: list[int]) -> Iterator[str]:
        for ch in self.chunks:
            yield ch.fmt % tuple([b + offsets[f] for b, f in zip(ch.bases, ch.families)])

    def render_varied(
        self, offsets: list[int], start_delta: np.ndarray, dur_delta: np.ndarray
    ) -> Iterator[str]:
        """As render, with each base event i moved by start_delta[i] and lengthened by
        dur_delta[i] (whole microseconds)."""
        offs = np.array(offsets, np.int64)
        for ch in self.chunks:
            bases, fam, ts_slots, ts_ev, dur_slots, dur_ev = ch.arrays()
            values = bases + offs[fam]
            values[ts_slots] += start_delta[ts_ev]
            values[dur_slots] += dur_delta[dur_ev]
            yield ch.fmt % tuple(values.tolist())


def build_template(et: EventTemplates, sep: str, indices: list[int] | None = None) -> Template:
    """Chunk the events `indices` (default: all, in order) into a Template."""
    rows: Iterable[int] = range(len(et.texts)) if indices is None else indices
    chunks: list[_Chunk] = []
    parts: list[str] = []
    bases: list[int] = []
    families: list[int] = []
    events: list[int] = []
    size = 0
    n = 0
    for i in rows:
        a, b = et.slot_start[i], et.slot_start[i + 1]
        parts.append(et.texts[i])
        bases.extend(et.bases[a:b])
        families.extend(et.families[a:b])
        events.extend([i] * (b - a))
        size += et.lengths[i]
        n += 1
        if size >= CHUNK_BYTES:
            chunks.append(_Chunk(sep.join(parts), bases, families, events))
            parts, bases, families, events, size = [], [], [], [], 0
    if parts:
        chunks.append(_Chunk(sep.join(parts), bases, families, events))
    return Template(chunks, n)


def partial_selection(events: list[dict], lengths: list[int], budget: int) -> list[int]:
    """Indices (in file order) of a time prefix of `events` worth about `budget` bytes, closed
    over correlations/flow ids: a launch, its GPU work and its flows go in or out together."""
    group_start: dict[int, decimal.Decimal] = {}
    starts: list[decimal.Decimal] = []
    for ev in events:
        ts = _time_us(ev.get("ts"))
        ts = decimal.Decimal(0) if ts is None else ts
        starts.append(ts)
        key = _link_key(ev)
        if key is not None and (key not in group_start or ts < group_start[key]):
            group_start[key] = ts
    for i, ev in enumerate(events):
        key = _link_key(ev)
        if key is not None:
            starts[i] = group_start[key]
    order = sorted(range(len(events)), key=starts.__getitem__)
    total = 0
    cut: decimal.Decimal | None = None
    for i in order:
        total += lengths[i]
        cut = starts[i]
        if total >= budget:
            break
    if cut is None:  # no events
        return []
    return [i for i in range(len(events)) if starts[i] <= cut]


# ----------------------------------------------------------------------------------------------
# Header
# ----------------------------------------------------------------------------------------------


def _header_value(enc: _Encoder, key: str, value: Any, layout: Layout) -> str:
    if layout.name == "oneline":
        return enc.encode(value)
    if layout.name == "indent":
        return enc.encode(value, 2, 1)
    # Native writer: device lists are spread over lines, everything else is one line.
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return enc.encode(value, 2, 1)
    return enc.encode(value)


def _rank_header(
    base: BaseTrace, rank: int, ranks: int, layout: Layout, trace_name: str
) -> tuple[list[tuple[str, Any]], list[tuple[str, Any]]]:
    """Header (key, value) pairs before and after traceEvents for one output rank."""
    items = []
    has_dist = False
    for key, value in base.header:
        if key == "distributedInfo" and isinstance(value, dict):
            value = dict(value, rank=rank, world_size=ranks)
            has_dist = True
        items.append((key, value))
    if not has_dist:
        # Without it the rank is unknown (readers fall back to 0): always name it.
        at = next(i for i, (k, _) in enumerate(items) if k == "traceEvents")
        items.insert(
            at, ("distributedInfo", {"backend": "nccl", "rank": rank, "world_size": ranks})
        )
    at = next(i for i, (k, _) in enumerate(items) if k == "traceEvents")
    before, after = items[:at], items[at + 1 :]
    if layout.name == "native":
        tail = [kv for kv in before if kv[0] in NATIVE_TAIL_KEYS]
        before = [kv for kv in before if kv[0] not in NATIVE_TAIL_KEYS]
        after = after + tail
        if not any(k == "traceName" for k, _ in before + after):
            after.append(("traceName", trace_name))
    return before, after


def _header_text(
    before: list[tuple[str, Any]], after: list[tuple[str, Any]], layout: Layout
) -> tuple[str, str]:
    enc = _Encoder(template=False)
    entries_before = [enc.string(k) + ": " + _header_value(enc, k, v, layout) for k, v in before]
    entries_after = [enc.string(k) + ": " + _header_value(enc, k, v, layout) for k, v in after]
    if layout.name == "oneline":
        lead, sep, end = "{", ", ", "}"
    else:
        lead, sep, end = "{\n  ", ",\n  ", "\n}"
    if layout.name == "native":
        lead = "\n" + lead  # the native writer starts with an empty line
    head = lead + "".join(e + sep for e in entries_before) + '"traceEvents": ' + layout.open_events
    tail = layout.close_events + "".join(sep + e for e in entries_after) + end
    return head, tail


# ----------------------------------------------------------------------------------------------
# Once-only events
# ----------------------------------------------------------------------------------------------


def _shift_time(value: Any, delta_us: int) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, decimal.Decimal)):
        return value
    return value + delta_us


def _middle_us(base: BaseTrace) -> decimal.Decimal | None:
    """The middle of the repeated events' times: once-only events after it close the window."""
    times = [t for ev in base.repeated if (t := _time_us(ev.get("ts"))) is not None]
    return (min(times) + max(times)) / 2 if times else None


def _once_only_events(
    base: BaseTrace,
    shifts: Shifts,
    reps: int,
    skew_us: int,
    extra_us: int = 0,
    middle: decimal.Decimal | None = None,
) -> tuple[list[dict], list[dict]]:
    """Prologue/epilogue events for one rank: skewed, and the profiler span and window-end
    instants stretched over all repetitions (and the `extra_us` a Variation adds). `middle`
    is _middle_us(base), passed in by callers that write many ranks."""
    if middle is None:
        middle = _middle_us(base)
    stretch = (reps - 1) * shifts.period_us + max(extra_us, 0)

    def adjust(ev: dict) -> dict:
        ev = dict(ev)
        if "ts" in ev:
            ts = _time_us(ev["ts"])
            late = middle is not None and ts is not None and ts > middle and ev.get("ph") != "M"
            ev["ts"] = _shift_time(ev["ts"], skew_us + (stretch if late else 0))
        if ev.get("cat") == "Trace" and ev.get("ph") == "X" and "dur" in ev:
            ev["dur"] = _shift_time(ev["dur"], stretch)
        return ev

    return [adjust(e) for e in base.prologue], [adjust(e) for e in base.epilogue]


# ----------------------------------------------------------------------------------------------
# Writing
# ----------------------------------------------------------------------------------------------


class _EventWriter:
    """Writes event text pieces with the layout's separator between them; counts bytes."""

    def __init__(self, fh: io.BufferedIOBase, sep: str) -> None:
        self.fh, self.sep, self.started, self.bytes = fh, sep, False, 0

    def raw(self, text: str) -> None:
        data = text.encode("utf-8")
        self.fh.write(data)
        self.bytes += len(data)

    def events(self, text: str) -> None:
        if not text:
            return
        self.raw(self.sep + text if self.started else text)
        self.started = True


@functools.lru_cache(maxsize=4)
def _prepare(
    base_path: str, mtime_ns: int, layout_name: str
) -> tuple[BaseTrace, Shifts, EventTemplates]:
    """The expensive, size-independent part; cached so that tests generating several sizes
    from one base pay for it once (mtime_ns is part of the key so an edited base is re-read)."""
    base = load_base(Path(base_path))
    return (
        base,
        compute_shifts(base.repeated),
        compile_events(base.repeated, Layout.get(layout_name)),
    )


@dataclass
class Plan:
    """Everything needed to write any rank of one output size."""

    base: BaseTrace
    layout: Layout
    shifts: Shifts
    full: Template
    full_reps: int
    partial: Template | None
    partial_events: list[dict]
    middle_us: decimal.Decimal | None = None  # _middle_us(base), computed once
    partial_rows: list[int] | None = None  # which base events the partial repetition holds

    @property
    def reps(self) -> int:
        return self.full_reps + (1 if self.partial is not None else 0)


def make_plan(base_path: Path, layout: Layout, size_mb: float) -> Plan:
    base, shifts, et = _prepare(str(base_path), base_path.stat().st_mtime_ns, layout.name)
    full = build_template(et, layout.sep)
    # Fixed part: header, once-only events and separators (measured on rank 0).
    before, after = _rank_header(base, 0, 1, layout, "rank0.json")
    head, tail = _header_text(before, after, layout)
    enc = _Encoder(template=False)
    once = [
        enc.encode(e, layout.event_indent, layout.event_level)
        for e in base.prologue + base.epilogue
    ]
    fixed = len(head) + len(tail) + sum(len(t) + len(layout.sep) for t in once)
    target = int(size_mb * MB)
    rep_bytes = sum(et.lengths)
    full_reps = max(0, (target - fixed) // rep_bytes)
    if full_reps > 1:
        # Ids gain digits as they grow: size a repetition from the middle of the run instead.
        middle = shifts.offsets(full_reps // 2, 0)
        rep_bytes = sum(len(text) + len(layout.sep) for text in full.render(middle))
        full_reps = max(0, (target - fixed) // rep_bytes)
    remainder = target - fixed - full_reps * rep_bytes
    partial, partial_events, keep = None, [], None
    # A sliver of a repetition is not worth the half-finished profiler step it would add.
    if full_reps == 0 or remainder > rep_bytes // 100:
        keep = partial_selection(base.repeated, et.lengths, max(remainder, 1))
        if len(keep) == len(base.repeated):
            full_reps += 1
        else:
            partial_events = [base.repeated[i] for i in keep]
            partial = build_template(et, layout.sep, keep)
    return Plan(
        base,
        layout,
        shifts,
        full,
        full_reps,
        partial,
        partial_events,
        _middle_us(base),
        keep if partial is not None else None,
    )


def base_times(events: list[dict]) -> BaseTimes:
    """The numbers of the base that a Variation needs, as arrays over its repeated events."""
    n = len(events)
    start = np.zeros(n, np.int64)
    end = np.zeros(n, np.int64)
    has_ts = np.zeros(n, bool)
    gpu_stream = np.full(n, -1, np.int64)
    kernel_names: dict[str, list[int]] = collections.defaultdict(list)
    streams: dict[tuple, int] = {}
    steps = []
    gpu_at: dict[tuple[int, int], int] = {}
    gpu_of_link: dict[int, int] = {}
    calls: list[tuple[int, str, int | None]] = []  # runtime calls: (event, name, link)
    flows: list[tuple[int, int]] = []  # (event, its link)
    for i, ev in enumerate(events):
        ts = _time_parts(ev.get("ts"))
        if ts is None:
            continue
        has_ts[i] = True
        start[i] = ts[0]
        dur = ev.get("dur")
        if ev.get("ph") == "X" and not (isinstance(dur, decimal.Decimal) and dur < 0):
            parts = _time_parts(dur)
            end[i] = ts[0] + max(parts[0] if parts else 0, 0)
        else:
            end[i] = ts[0]
        cat, ph = ev.get("cat"), ev.get("ph")
        if cat in GPU_CATS and ph == "X":
            key = (ev.get("pid"), ev.get("tid"))
            gpu_stream[i] = streams.setdefault(key, len(streams))
            if cat in ("kernel", "Kernel") and isinstance(ev.get("name"), str):
                kernel_names[ev["name"]].append(i)
            link = _link_key(ev)
            if link is not None:
                gpu_at[(link, ts[0])] = i
                gpu_of_link[link] = i
        elif ph in FLOW_PHASES and (flow := _link_key(ev)) is not None:
            flows.append((i, flow))
        elif cat in LAUNCH_CATS and ph == "X" and isinstance(ev.get("name"), str):
            calls.append((i, ev["name"], _link_key(ev)))
        name = ev.get("name")
        if ph == "X" and cat != "gpu_user_annotation" and isinstance(name, str):
            if STEP_RE.match(name):
                steps.append(ts[0])
    # Events without a time are never moved; give them one that changes no union or origin.
    if has_ts.any() and not has_ts.all():
        start[~has_ts] = end[~has_ts] = start[has_ts].min()
    compute = np.zeros(n, bool)
    collective = np.zeros(n, bool)
    for name, cls in kernel_classes(list(kernel_names)).items():
        rows = kernel_names[name]
        compute[rows] = cls == KernelClass.COMP
        collective[rows] = cls == KernelClass.COMM
    flow_on = np.full(n, -1, np.int64)
    for i, flow in flows:
        target = gpu_at.get((flow, int(start[i])))
        if target is not None:
            flow_on[i] = target
    steps.sort()
    gpu_pids = {events[i].get("pid") for i in np.flatnonzero(gpu_stream >= 0).tolist()}
    gpu_side = np.array([ev.get("pid") in gpu_pids for ev in events], bool)
    return BaseTimes(
        start,
        end,
        gpu_stream,
        compute,
        collective,
        flow_on,
        np.array(steps, np.int64),
        gpu_side,
        _host_waits(events, calls, gpu_of_link, end),
    )


def _host_waits(
    events: list[dict],
    calls: list[tuple[int, str, int | None]],
    gpu_of_link: dict[int, int],
    end: np.ndarray,
) -> np.ndarray:
    """Per event, whether it is a runtime call that held the host until GPU work was done: a
    synchronize or a synchronous copy by name, or an asynchronous copy to or from pageable
    memory that returned once its copy was done (hta_fast.sync_calls)."""
    out = np.zeros(len(events), bool)
    if not calls:
        return out
    rows = np.array([i for i, _, _ in calls], np.int64)
    names = [n for _, n, _ in calls]
    out[rows] = np.isin(sync_calls.sync_kind_of_names(names), sync_calls.BLOCKING)
    copied = [(i, n, gpu_of_link[k]) for i, n, k in calls if k is not None and k in gpu_of_link]
    if copied:
        call = np.array([i for i, _, _ in copied], np.int64)
        copy = np.array([g for _, _, g in copied], np.int64)
        copy_names = [str(events[g].get("name", "")) for g in copy.tolist()]
        pageable = sync_calls.pageable_copies(
            [n for _, n, _ in copied], copy_names, end[call], end[copy]
        )
        out[call[pageable]] = True
    return out


@functools.lru_cache(maxsize=4)
def _structure(base_path: str, mtime_ns: int, layout_name: str) -> Structure:
    base, shifts, _ = _prepare(base_path, mtime_ns, layout_name)
    return Structure(base_times(base.repeated), shifts.period_us)


@dataclass
class VariedRanks:
    """A Variation worked out for every rank of one output: the base's structure and each
    repetition's schedule."""

    structure: Structure
    reps: list[RepSchedule]

    rows_of_last: np.ndarray | None = None  # the events a partial last repetition writes

    def deltas(self, rank: int, rep: int) -> tuple[np.ndarray, np.ndarray]:
        rows = self.rows_of_last if rep == len(self.reps) - 1 else None
        return event_deltas(self.structure, self.reps[rep], rank, rows)

    def end_shift_us(self, rank: int) -> int:
        """How much later than without variation the rank's last repetition ends."""
        return int(np.rint(self.reps[-1].end_shift[rank]))


def plan_variation(
    plan: Plan, base_path: Path, variation: Variation, ranks: int
) -> VariedRanks | None:
    """None when the variation changes nothing (then every rank is the base, skewed)."""
    if not variation.active:
        return None
    st = _structure(str(base_path), base_path.stat().st_mtime_ns, plan.layout.name)
    rows = None if plan.partial_rows is None else np.array(plan.partial_rows, np.int64)
    return VariedRanks(st, schedule(st, variation, ranks, plan.reps), rows)


def rank_skew_us(seed: int, rank: int) -> int:
    """Clocks of different ranks disagree by milliseconds in real jobs; rank 0 keeps the base's."""
    return 0 if rank == 0 else random.Random(f"{seed}:{rank}").randint(100, 5000)


def write_rank(
    plan: Plan,
    path: Path,
    rank: int,
    ranks: int,
    seed: int,
    compress: bool,
    gzip_level: int,
    varied: VariedRanks | None = None,
) -> int:
    """Write one rank's file; returns the number of JSON bytes written (before compression)."""
    layout = plan.layout
    skew = rank_skew_us(seed, rank)
    before, after = _rank_header(plan.base, rank, ranks, layout, str(path))
    head, tail = _header_text(before, after, layout)
    extra = varied.end_shift_us(rank) if varied is not None else 0
    prologue, epilogue = _once_only_events(
        plan.base, plan.shifts, plan.reps, skew, extra, plan.middle_us
    )
    enc = _Encoder(template=False)

    def once(events: list[dict]) -> str:
        return layout.sep.join(
            enc.encode(e, layout.event_indent, layout.event_level) for e in events
        )

    fh_ctx = gzip.open(path, "wb", compresslevel=gzip_level) if compress else open(path, "wb")
    with fh_ctx as fh:
        out = _EventWriter(fh, layout.sep)
        out.raw(head)
        out.events(once(prologue))
        pieces = [(rep, plan.full) for rep in range(plan.full_reps)]
        if plan.partial is not None:
            pieces.append((plan.full_reps, plan.partial))
        for rep, template in pieces:
            offsets = plan.shifts.offsets(rep, skew)
            if varied is None:
                texts = template.render(offsets)
            else:
                texts = template.render_varied(offsets, *varied.deltas(rank, rep))
            for text in texts:
                out.events(text)
        out.events(once(epilogue))
        out.raw(tail)
        return out.bytes


def generate(
    out_dir: str | Path,
    size_mb: float,
    ranks: int = 1,
    *,
    base: str | Path | None = None,
    layout: str = "native",
    compress: bool = False,
    seed: int = 0,
    gzip_level: int = 6,
    verify: bool = False,
    log: Callable[[str], object] | None = None,
    stragglers: Mapping[int, float] | None = None,
    slow_links: Mapping[int, float] | None = None,
    jitter_pct: float = 0.0,
) -> list[Path]:
    """Write `ranks` files rank{r}.json[.gz] of about `size_mb` MB of JSON each into `out_dir`.

    Returns their paths. With verify=True each file is read back and its links checked
    (small sizes only).

    Without the last three options every rank is the base program, only its clock skewed.
    With them ranks differ (see hta_fast.synth.variation for the model):

    stragglers: {rank: factor}: that rank's GPU compute kernels last `factor` times as long
        (the rank's other work moves with them); the other ranks' collectives wait for it.
    slow_links: {rank: factor}: that rank's collective (NCCL) kernels last `factor` times as
        long; the other ranks' collectives wait for it.
    jitter_pct: every (rank, step) gets a compute factor drawn uniformly from
        [1 - jitter_pct/100, 1 + jitter_pct/100], deterministic for `seed`.

    A collective ends at the same time on every rank; hosts wait only in their blocking calls."""
    variation = Variation(dict(stragglers or {}), dict(slow_links or {}), jitter_pct, seed)
    if ranks < 1:
        raise ValueError("ranks must be >= 1")
    if verify and size_mb > VERIFY_LIMIT_MB:
        raise ValueError(
            f"verify reads the whole file with json; use it up to {VERIFY_LIMIT_MB} MB"
        )
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    base_path = Path(base) if base is not None else DEFAULT_BASE
    if not base_path.exists():
        raise FileNotFoundError(
            f"base trace {base_path} not found (shared/traces must sit beside the repo)"
        )
    t0 = time.perf_counter()
    plan = make_plan(base_path, Layout.get(layout), size_mb)
    if log:
        part = f" + 1 partial ({len(plan.partial_events)} events)" if plan.partial else ""
        log(
            f"base {base_path.name}: {len(plan.base.repeated)} repeated events, period "
            f"{plan.shifts.period_us} us; {plan.full_reps} full repetitions{part}; "
            f"prepared in {time.perf_counter() - t0:.1f} s"
        )
    varied = plan_variation(plan, base_path, variation, ranks)
    paths = []
    for rank in range(ranks):
        path = out_dir / (f"rank{rank}.json" + (".gz" if compress else ""))
        t1 = time.perf_counter()
        nbytes = write_rank(plan, path, rank, ranks, seed, compress, gzip_level, varied)
        dt = time.perf_counter() - t1
        if log:
            log(
                f"{path}: {nbytes / MB:.1f} MB JSON in {dt:.1f} s ({nbytes / MB / max(dt, 1e-9):.0f} MB/s)"
            )
        if verify:
            verify_file(plan, path, rank, ranks)
            if log:
                log(f"{path}: verified")
        paths.append(path)
    return paths


# ----------------------------------------------------------------------------------------------
# Self-check
# ----------------------------------------------------------------------------------------------


def _ts_shape(value: Any) -> str:
    """'int', or 'frac<n>' for a fractional number written with n decimals."""
    if isinstance(value, bool):
        return "other"
    if isinstance(value, int):
        return "int"
    if isinstance(value, (str, decimal.Decimal)):
        text = value if isinstance(value, str) else format(value, "f")
        _, dot, frac = text.partition(".")
        return f"frac{len(frac)}" if dot else "int"
    return "missing" if value is None else "other"


def link_stats(events: Iterable[dict]) -> collections.Counter:
    """Counts that add up over repetitions when (and only when) links stay unique per repetition:
    duplicates counted here are duplicates that the base itself has."""
    st: collections.Counter = collections.Counter()
    launch_corr: collections.Counter = collections.Counter()
    gpu_corr: collections.Counter = collections.Counter()
    flows: collections.Counter = collections.Counter()
    steps: collections.Counter = collections.Counter()
    for ev in events:
        ph, cat = ev.get("ph"), ev.get("cat")
        st["events"] += 1
        st[f"ph={ph} cat={cat}"] += 1
        st[f"ts:{_ts_shape(ev.get('ts'))}"] += 1
        corr = (
            (ev.get("args") or {}).get("correlation") if isinstance(ev.get("args"), dict) else None
        )
        if isinstance(corr, int) and corr > 0:
            if cat in LAUNCH_CATS:
                launch_corr[corr] += 1
            elif cat in GPU_CATS:
                gpu_corr[corr] += 1
        if ph in FLOW_PHASES and "id" in ev:
            flows[(cat, ev["id"], ph)] += 1
        # GPU-side copies of a step annotation carry the same name; count the CPU one.
        name = ev.get("name")
        is_cpu_step = ph == "X" and cat != "gpu_user_annotation"
        m = STEP_RE.match(name) if isinstance(name, str) and is_cpu_step else None
        if m:
            steps[int(m.group(1))] += 1
    st["launch_corr_dup"] = sum(c - 1 for c in launch_corr.values())
    st["gpu_corr_dup"] = sum(c - 1 for c in gpu_corr.values())
    st["gpu_with_launch"] = sum(c for k, c in gpu_corr.items() if k in launch_corr)
    st["flow_dup"] = sum(c - 1 for c in flows.values())
    ids = collections.defaultdict(set)
    for cat, fid, ph in flows:
        ids[(cat, fid)].add(ph)
    st["flow_pairs"] = sum(1 for phs in ids.values() if {"s", "f"} <= phs)
    st["steps"] = len(steps)
    st["step_dup"] = sum(c - 1 for c in steps.values())
    return +st  # drop zero counts so comparisons ignore them


def verify_file(plan: Plan, path: Path, rank: int, ranks: int) -> None:
    """Read the file back with json and check that links survived the repetition."""
    text = _open_text(path)
    doc = json.loads(text, parse_float=str)  # keep fractional timestamps as written
    problems = []
    dist = doc.get("distributedInfo") or {}
    if dist.get("rank") != rank or dist.get("world_size") != ranks:
        problems.append(f"distributedInfo {dist} does not name rank {rank} of {ranks}")
    m = REFERENCE_RANK_RE.search(text)
    if not m or int(m.group(1)) != rank:
        problems.append(f'first "rank": match is {m and m.group(0)!r}, expected rank {rank}')
    for key, _ in plan.base.header:
        if key not in ("traceEvents", "distributedInfo") and key not in doc:
            problems.append(f"header key {key!r} lost")
    expected = link_stats(plan.base.prologue + plan.base.epilogue)
    one = link_stats(plan.base.repeated)
    for _ in range(plan.full_reps):
        expected.update(one)
    if plan.partial is not None:
        expected.update(link_stats(plan.partial_events))
    got = link_stats(doc["traceEvents"])
    for key in sorted(set(expected) | set(got)):
        if expected.get(key, 0) != got.get(key, 0):
            problems.append(f"{key}: expected {expected.get(key, 0)}, got {got.get(key, 0)}")
    if problems:
        raise AssertionError(f"{path}:\n  " + "\n  ".join(problems))


# ----------------------------------------------------------------------------------------------
# Command line
# ----------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--size-mb", type=float, required=True, help="JSON size per rank, MB (10**6 bytes)"
    )
    ap.add_argument("--ranks", type=int, default=1)
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--gzip", action="store_true", help="write rank{r}.json.gz")
    ap.add_argument("--gzip-level", type=int, default=6, help="1-9 (torch writes 9; slower)")
    ap.add_argument("--layout", choices=LAYOUTS, default="native")
    ap.add_argument("--seed", type=int, default=0, help="varies the per-rank clock skew")
    ap.add_argument("--base", default=None, help=f"real trace to repeat (default {DEFAULT_BASE})")
    ap.add_argument(
        "--verify", action="store_true", help=f"read back and check links (<= {VERIFY_LIMIT_MB} MB)"
    )
    ap.add_argument(
        "--straggler",
        metavar="RANK:FACTOR",
        action="append",
        default=[],
        help="that rank's GPU compute takes FACTOR times as long; the others' collectives "
        "wait for it (repeatable)",
    )
    ap.add_argument(
        "--slow-link",
        metavar="RANK:FACTOR",
        action="append",
        default=[],
        help="that rank's collective (NCCL) kernels take FACTOR times as long; the others' "
        "collectives wait for it (repeatable)",
    )
    ap.add_argument(
        "--jitter",
        metavar="PCT",
        type=float,
        default=0.0,
        help="each (rank, step) scales its compute by a factor drawn uniformly from "
        "[1-PCT/100, 1+PCT/100] (from --seed)",
    )
    ap.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="nothing per file: only the one-line summary at the end (on stderr)",
    )
    args = ap.parse_args(argv)
    if args.verify and args.size_mb > VERIFY_LIMIT_MB:
        ap.error(f"--verify reads the whole file with json; use it up to {VERIFY_LIMIT_MB} MB")
    try:
        stragglers = dict(parse_rank_factor(t) for t in args.straggler)
        slow_links = dict(parse_rank_factor(t) for t in args.slow_link)
        Variation(stragglers, slow_links, args.jitter, args.seed)  # checks the values
    except ValueError as e:
        ap.error(str(e))
    log = None if args.quiet else (lambda msg: print(msg, file=sys.stderr))
    t0 = time.perf_counter()
    paths = generate(
        args.out,
        args.size_mb,
        args.ranks,
        base=args.base,
        layout=args.layout,
        compress=args.gzip,
        seed=args.seed,
        gzip_level=args.gzip_level,
        verify=args.verify,
        log=log,
        stragglers=stragglers,
        slow_links=slow_links,
        jitter_pct=args.jitter,
    )
    if args.quiet:
        print(
            f"{len(paths)} file(s) written to {args.out} in {time.perf_counter() - t0:.1f} s",
            file=sys.stderr,
        )
        return 0
    print(f"done in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    for p in paths:
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
