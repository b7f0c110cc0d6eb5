"""The edits of a what-if (hta_fast.model.whatif.steps.what_if), as one value checked once.

    kernel_class   {"COMM": 0.5, "COMP": 0.8}: scale GPU event durations by kernel class
                   (COMP, COMM, MEM)
    name           {regex: factor}: scale GPU events whose name matches (re.search)
    category       {cat: factor}: scale GPU events by their trace category ("kernel",
                   "gpu_memcpy", "gpu_memset")
    cpu            scale CPU time: CPU event durations, gaps between a thread's calls and the
                   non-waiting part of sync calls
    zero_launch_overhead  launch edges cost nothing and launch calls take no CPU time (what
                   CUDA graphs approach)
    drop_comm_waits  nothing waits for communication: cross-stream and host-sync edges from
                   communication kernels are dropped (the perfect-overlap bound)
    drop_sync_waits  blocking syncs return at once: the host's waits for the GPU (sync_wait
                   edges) are dropped, and a sync call takes what the trace's syncs that did
                   not wait took (no .item(), no synchronize() in the step)
    collective_bandwidth / collective_busbw_gbps  a faster or slower interconnect: each
                   collective's time moving data changes by the factor the collective cost
                   model (collective_cost, default: fitted to the traces) predicts for its
                   size (hta_fast.model.whatif.declared.bandwidth_edit); the rest of a kernel's
                   duration, waiting for other ranks, is kept
    device         this step on another GPU: each launched GPU event's duration becomes the
                   one hta_fast.model.predict gives on that device (source_device,
                   devices_file and allow_tf32 as there; hta_fast.model.whatif.declared.device_edit);
                   the host, the waits and the launch order stay as recorded
    op_scale       {regex: factor}: CPU events (ops, annotations, Python functions, runtime
                   calls) whose name matches take factor times as long, with everything
                   nested under them on their thread (0: the op costs nothing;
                   hta_fast.model.whatif.declared.op_edit)
    durations_from / match  events that match take the durations another trace (a Trace,
                   a TraceSet, or a path to load) measured for its matching events: match is
                   a regex for both traces or {regex here: regex there}; CPU events with what
                   runs under them, GPU events their GPU time; how each event was paired is
                   in the result's "durations_from" table
                   (hta_fast.model.whatif.declared.durations_from)
    duration_change  per rank, (event rows, ns added to each one's duration): edits computed
                   elsewhere (hta_fast.model.plans.plan_replay)
    op_change      per rank, (CPU event rows, factor): those ops and what they hold take
                   factor times as long (as op_scale; computed elsewhere)
    world_size / topology / recorded_topology  the job at another scale: world_size ranks
                   of data parallelism (the same batch per rank) on `topology` (a file or a
                   shipped name, hta_fast.model.comm.topology; default: the recorded machine,
                   calibrated on the trace's collectives); each collective is re-costed by
                   the collective model for its new ranks, anchored on its recorded time,
                   and its slowest-rank wait grows with the ranks; compute is unchanged
                   (hta_fast.model.whatif.declared.world_size_edit). recorded_topology: the recorded
                   machine's links, where its GPU does not call for the right file
    edit_ranks     the ranks the factor, device and declared edits apply to (default: all);
                   the bandwidth and world-size edits and duration_change apply where they say
    added          {keyword: value} of the edits declared in hta_fast.model.whatif.declared.registry
                   that have no field here (what_if takes them as keywords); each changes
                   GPU durations through its declaration's gpu_changes

Factors on one event multiply.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import os
import re
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np

from ...costs.devices import Device
from ...schema import KernelClass
from ...trace import Trace
from ...traceset import TraceSet
from ..comm.collective_cost import CostModel
from ..comm.topology import Topology
from .declared.bandwidth_edit import check_bandwidth
from .declared.registry import BY_KEYWORD
from .declared.world_size_edit import as_topology, check_world

Changes = Mapping[int, tuple[np.ndarray, np.ndarray]]

KERNEL_CLASSES = [k.name for k in KernelClass if k.name not in ("NONE", "SYNC")]


def _fail(field: str, message: str) -> ValueError:
    return ValueError(f"Edits.{field}: {message}")


def _factor(field: str, value: Any) -> float:
    number = (
        float(value)
        if isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))
        else math.nan
    )
    if not number >= 0 or not math.isfinite(number):
        raise _fail(field, f"what-if factors must be numbers >= 0, got {value!r}")
    return number


def _factors(field: str, table: Optional[Mapping[str, float]]) -> Optional[Mapping[str, float]]:
    """A copy of a {key: factor} table, each factor checked."""
    if table is None:
        return None
    if not isinstance(table, Mapping):
        raise _fail(field, f"expected a mapping of {field} to factors, got {table!r}")
    out = {}
    for key, f in table.items():
        if not isinstance(key, str):
            raise _fail(field, f"keys must be strings, got {key!r}")
        out[key] = _factor(f"{field}[{key!r}]", f)
    return out


def _check_pattern(field: str, pattern: str) -> None:
    try:
        re.compile(pattern)
    except re.error as e:
        raise _fail(field, f"bad name pattern {pattern!r}: {e}") from None


def _changes(field: str, table: Optional[Changes]) -> Optional[Changes]:
    """duration_change / op_change as int64 rows and float values per rank, of equal
    lengths."""
    if table is None:
        return None
    out = {}
    for rank, pair in table.items():
        rows, delta = (np.asarray(v) for v in pair)
        if rows.ndim != 1 or rows.shape != delta.shape:
            raise _fail(
                field,
                f"rank {rank}: expected (rows, values) of one length, "
                f"got shapes {rows.shape} and {delta.shape}",
            )
        out[int(rank)] = (rows.astype(np.int64), delta.astype(np.float64))
    return out


@dataclasses.dataclass(frozen=True)
class Edits:
    """What a what-if changes (the module doc); every field optional, all applied together."""

    kernel_class: Optional[Mapping[str, float]] = None
    name: Optional[Mapping[str, float]] = None
    category: Optional[Mapping[str, float]] = None
    cpu: float = 1.0
    zero_launch_overhead: bool = False
    drop_comm_waits: bool = False
    drop_sync_waits: bool = False
    collective_bandwidth: Optional[float] = None
    collective_busbw_gbps: Optional[float] = None
    collective_cost: Optional[CostModel] = None
    device: Union[str, Device, None] = None
    source_device: Union[str, Device, None] = None
    devices_file: Optional[str] = None
    allow_tf32: Union[bool, str] = False
    op_scale: Optional[Mapping[str, float]] = None
    durations_from: Any = None  # a Trace, a TraceSet or a path
    match: Union[str, Mapping[str, str], None] = None
    duration_change: Optional[Changes] = None
    op_change: Optional[Changes] = None
    edit_ranks: Optional[Sequence[int]] = None  # kept as a sorted tuple
    world_size: Optional[int] = None
    topology: Union[str, Topology, None] = None  # kept as a Topology
    recorded_topology: Union[str, Topology, None] = None  # kept as a Topology
    added: Optional[Mapping[str, Any]] = None  # kept as a dict, None when empty

    def __post_init__(self) -> None:
        put = object.__setattr__  # frozen: the checked, normalized values are set once here
        for field in ("kernel_class", "name", "category", "op_scale"):
            put(self, field, _factors(field, getattr(self, field)))
        for cls in self.kernel_class or {}:
            if cls not in KERNEL_CLASSES:
                raise _fail(
                    "kernel_class", f"unknown kernel class {cls!r}: one of {KERNEL_CLASSES}"
                )
        for field in ("name", "op_scale"):
            for pattern in getattr(self, field) or {}:
                _check_pattern(field, pattern)
        self._check_durations_from()
        put(self, "cpu", _factor("cpu", self.cpu))
        for field in ("zero_launch_overhead", "drop_comm_waits", "drop_sync_waits"):
            if not isinstance(getattr(self, field), (bool, np.bool_)):
                raise _fail(field, f"expected True or False, got {getattr(self, field)!r}")
        self._check_bandwidth()
        self._check_device()
        self._check_world()
        put(self, "duration_change", _changes("duration_change", self.duration_change))
        put(self, "op_change", _changes("op_change", self.op_change))
        if self.edit_ranks is not None:
            put(self, "edit_ranks", tuple(sorted({int(r) for r in self.edit_ranks})))
        put(self, "added", _added(self.added))

    def _check_durations_from(self) -> None:
        if (self.durations_from is None) != (self.match is None):
            raise _fail(
                "durations_from" if self.durations_from is None else "match",
                "durations_from and match go together: the trace to take durations from, "
                "and which events (a regex, or {regex here: regex there})",
            )
        if self.match is None:
            return
        if isinstance(self.match, str):
            _check_pattern("match", self.match)
        elif isinstance(self.match, Mapping) and self.match:
            put = object.__setattr__
            for a, b in self.match.items():
                if not isinstance(a, str) or not isinstance(b, str):
                    raise _fail("match", f"patterns must be strings, got {a!r}: {b!r}")
                _check_pattern("match", a)
                _check_pattern("match", b)
            put(self, "match", dict(self.match))
        else:
            raise _fail("match", f"a regex or a non-empty {{regex: regex}}, got {self.match!r}")
        if not isinstance(self.durations_from, (str, os.PathLike, Trace, TraceSet)):
            raise _fail(
                "durations_from",
                f"a Trace, a TraceSet or a path, got {type(self.durations_from).__name__}",
            )

    def _check_bandwidth(self) -> None:
        if self.collective_bandwidth is None and self.collective_busbw_gbps is None:
            return
        try:
            check_bandwidth(self.collective_bandwidth, self.collective_busbw_gbps)
        except ValueError as e:
            field = (
                "collective_bandwidth"
                if self.collective_busbw_gbps is None
                else "collective_busbw_gbps"
                if self.collective_bandwidth is None
                else "collective_bandwidth / collective_busbw_gbps"
            )
            raise _fail(field, str(e)) from None
        if self.collective_cost is not None and not isinstance(self.collective_cost, CostModel):
            raise _fail(
                "collective_cost",
                f"expected a CostModel (fit_collectives), got "
                f"{type(self.collective_cost).__name__}",
            )

    def _check_device(self) -> None:
        for field in ("device", "source_device"):
            value = getattr(self, field)
            if value is not None and not isinstance(value, (str, Device)):
                raise _fail(field, f"a device table key or name, or a Device, got {value!r}")
        if self.allow_tf32 not in (True, False, "auto"):
            raise _fail("allow_tf32", f"True, False or 'auto', got {self.allow_tf32!r}")

    def _check_world(self) -> None:
        put = object.__setattr__
        try:
            check_world(self.world_size, self.topology)
        except ValueError as e:
            raise _fail("world_size" if "world size" in str(e) else "topology", str(e)) from None
        if self.world_size is not None:
            put(self, "world_size", int(self.world_size))
        for field in ("topology", "recorded_topology"):
            value = getattr(self, field)
            if value is None:
                continue
            try:
                check_world(None, value)
                put(self, field, as_topology(value))
            except ValueError as e:
                raise _fail(field, str(e)) from None

    @property
    def changes_world(self) -> bool:
        """Whether the world-size edit applies (a world size or a topology is given)."""
        return self.world_size is not None or self.topology is not None

    @property
    def changes_bandwidth(self) -> bool:
        return self.collective_bandwidth is not None or self.collective_busbw_gbps is not None

    def applies_to(self, rank: int) -> bool:
        """Whether the factor and device edits apply on this rank."""
        return self.edit_ranks is None or rank in self.edit_ranks

    def on_rank(self, rank: int) -> Edits:
        """The edits whose factors this rank's weights take: these, or none."""
        return self if self.applies_to(rank) else NO_EDITS

    def params(self) -> dict[str, Any]:
        """The edits as a Result's params (a device by its key)."""
        device = (
            self.device if self.device is None or isinstance(self.device, str) else self.device.key
        )

        def copy(table: Optional[Mapping[str, float]]) -> Optional[dict[str, float]]:
            return None if table is None else dict(table)

        params = {
            "kernel_class": copy(self.kernel_class),
            "name": copy(self.name),
            "category": copy(self.category),
            "cpu": self.cpu,
            "zero_launch_overhead": self.zero_launch_overhead,
            "drop_comm_waits": self.drop_comm_waits,
            "drop_sync_waits": self.drop_sync_waits,
            "collective_bandwidth": self.collective_bandwidth,
            "collective_busbw_gbps": self.collective_busbw_gbps,
            "op_scale": copy(self.op_scale),
            "durations_from": source_name(self.durations_from),
            "match": self.match,
            "edit_ranks": None if self.edit_ranks is None else list(self.edit_ranks),
            "device": device,
            "world_size": self.world_size,
            "topology": _topology_name(self.topology),
            "recorded_topology": _topology_name(self.recorded_topology),
        }
        params.update(self.added or {})
        return params


FIELDS = [f.name for f in dataclasses.fields(Edits) if f.name != "added"]
# what_if's keywords: the fields, then the declared edits' keywords that have no field.
KEYWORDS = FIELDS + [k for k in BY_KEYWORD if k not in FIELDS]


def _added(values: Optional[Mapping[str, Any]]) -> Optional[dict[str, Any]]:
    """The declared edits' values, each edit's checked by its declaration."""
    if not values:
        return None
    if not isinstance(values, Mapping):
        raise _fail("added", f"expected a mapping of edit keywords to values, got {values!r}")
    unknown = sorted(k for k in values if k not in BY_KEYWORD or k in FIELDS)
    if unknown:
        extra = [k for k in KEYWORDS if k not in FIELDS]
        raise _fail("added", f"unknown keyword(s) {unknown}: the declared edits' are {extra}")
    out: dict[str, Any] = {}
    for edit in {BY_KEYWORD[k].key: BY_KEYWORD[k] for k in values}.values():
        if edit.gpu_changes is None:
            raise _fail("added", f"the edit {edit.key!r} declares no gpu_changes to apply")
        mine = {k: values[k] for k in edit.keywords if k in values}
        try:
            out.update(edit.check(mine) if edit.check is not None else mine)
        except ValueError as e:
            raise _fail(edit.key, str(e)) from None
    return out


def edit_keywords(edits: Optional[Edits], keywords: Mapping[str, Any]) -> dict[str, Any]:
    """what_if's keywords as Edits' fields: the declared edits' values (not None) in
    `added`, with those `edits` already holds."""
    fields = {k: v for k, v in keywords.items() if k in FIELDS}
    added = {k: v for k, v in keywords.items() if k not in FIELDS and v is not None}
    if added:
        fields["added"] = {**((edits.added if edits is not None else None) or {}), **added}
    return fields


def _topology_name(topology: Union[str, Topology, None]) -> Optional[str]:
    return topology.name if isinstance(topology, Topology) else topology


def source_name(source: Any) -> Optional[str]:
    """durations_from as text: its path, or where the trace was loaded from."""
    if source is None:
        return None
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)
    traces = [source] if isinstance(source, Trace) else [source[r] for r in source.ranks]
    paths = [str(t.meta.path) for t in traces if t.meta.path]
    if len(paths) == 1:
        return paths[0]
    folders = {os.path.dirname(p) for p in paths}
    return f"{folders.pop()} ({len(paths)} ranks)" if len(folders) == 1 else "the other traces"


NO_EDITS = Edits()
