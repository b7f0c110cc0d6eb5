"""The edits that change event durations event by event, per rank: GPU events by ns, merged
into one (event rows, ns) pair per rank (the bandwidth edit, hta_fast.model.whatif.declared.bandwidth_edit;
the job at another scale, hta_fast.model.whatif.declared.world_size_edit;
another GPU, hta_fast.model.whatif.declared.device_edit, given as a function: the kernel models it
runs are imported only where a replay can take a device edit; the GPU side of
durations_from; the edits' own duration_change; the declared edits without an Edits field,
hta_fast.model.whatif.declared.registry), and CPU ops by a factor on them and what they hold
(op_scale and the CPU side of durations_from, hta_fast.model.whatif.declared.op_edit)."""

from __future__ import annotations

import dataclasses
import os
from typing import Callable, Mapping, Optional, Union

import numpy as np
import pyarrow as pa

from ...frame import select
from ...loading import load, load_dir
from ...trace import Trace
from ...traceset import TraceSet
from ..comm.collective_links import MatchedCollectives
from .declared.bandwidth_edit import collective_bandwidth_factors
from .declared.durations_from import PAIRING_SCHEMA, pair_durations, pairing_notes
from .declared.op_edit import RowFactors, matching_cpu_rows
from .declared.registry import EDITS
from .declared.world_size_edit import world_size_factors
from .edits import Edits, source_name

Changes = dict[int, tuple[np.ndarray, np.ndarray]]
# The device edit (hta_fast.model.whatif.device_changes.edit_changes): for the edits' device,
# per rank the changes, the notes and the changes at each end of the prediction's band.
DeviceEdit = Callable[
    [Union[Trace, TraceSet], Edits, select.Selection],
    tuple[Changes, list[str], dict[str, Changes]],
]


@dataclasses.dataclass
class DurationChanges:
    """per_rank: (event rows, ns added to each one's duration); factor: per matched
    collective, what its time moving data is multiplied by (None without a bandwidth edit);
    notes from the edits that made them; ops: per rank, (CPU event rows, factor on each and
    what it holds); pairing: how durations_from paired the events (None without it);
    bands: with a device edit, per_rank with every event at the low and at the high end of
    its prediction's band ({"low": ..., "high": ...}; empty without one); tables: the
    edits' own tables for the result (world_size: each collective before / after)."""

    per_rank: Changes
    factor: Optional[np.ndarray]
    notes: list[str]
    ops: dict[int, RowFactors] = dataclasses.field(default_factory=dict)
    pairing: Optional[pa.Table] = None
    bands: dict[str, Changes] = dataclasses.field(default_factory=dict)
    tables: dict[str, pa.Table] = dataclasses.field(default_factory=dict)


def comm_changes(matched: MatchedCollectives, factor: np.ndarray) -> Changes:
    """Per rank, (communication kernel rows, ns added to each one's duration) when each
    matched collective's time moving data is multiplied by `factor` (one per collective)."""
    return {
        rank: (rc.rows, matched.data_time[rc.match] * (factor[rc.match] - 1.0))
        for rank, rc in matched.per_rank.items()
    }


def add_changes(changes: Changes, more: Mapping[int, tuple[np.ndarray, np.ndarray]]) -> None:
    """Merge `more` into `changes`: the changes to one row add up."""
    for rank, (ev_rows, delta) in more.items():
        ev_rows, delta = np.asarray(ev_rows, np.int64), np.asarray(delta, np.float64)
        if rank in changes:
            ev_rows = np.concatenate([changes[rank][0], ev_rows])
            delta = np.concatenate([changes[rank][1], delta])
            ev_rows, inv = np.unique(ev_rows, return_inverse=True)
            delta = np.bincount(inv.reshape(-1), delta, minlength=len(ev_rows))
        changes[int(rank)] = (ev_rows, delta)


def duration_changes(
    traces: Union[Trace, TraceSet],
    edits: Edits,
    matched: Optional[MatchedCollectives],
    sel: select.Selection,
    device: Optional[DeviceEdit] = None,
) -> DurationChanges:
    """Every rank's duration changes under these edits (matched: the traces' collectives,
    needed by the bandwidth and world-size edits; their factors on one collective
    multiply). The device edit (by `device`; edits with a device and no `device` are a
    ValueError) applies on the edited ranks only."""
    changes: Changes = {}
    factor = None
    notes: list[str] = []
    tables: dict[str, pa.Table] = {}
    if edits.changes_bandwidth:
        assert matched is not None
        factor, bw_notes = collective_bandwidth_factors(
            traces,
            matched,
            scale=edits.collective_bandwidth,
            busbw_gbps=edits.collective_busbw_gbps,
            cost=edits.collective_cost,
        )
        notes += bw_notes
    if edits.changes_world:
        assert matched is not None
        world = world_size_factors(
            traces,
            matched,
            world_size=edits.world_size,
            topology=edits.topology,
            recorded_topology=edits.recorded_topology,
        )
        factor = world.factor if factor is None else factor * world.factor
        notes += world.notes
        tables["world_size"] = world.table
    if factor is not None:
        assert matched is not None
        changes = comm_changes(matched, factor)
    add_changes(changes, edits.duration_change or {})
    bands: dict[str, Changes] = {}
    if edits.device is not None:
        if device is None:
            raise ValueError("a device edit needs what_if (hta_fast.model.whatif.steps)")
        on_device, device_notes, on_band = device(traces, edits, sel)
        for band, band_changes in on_band.items():
            bands[band] = dict(changes)  # add_changes replaces a rank's entry, never edits it
            add_changes(bands[band], {r: c for r, c in band_changes.items() if edits.applies_to(r)})
        add_changes(changes, {r: c for r, c in on_device.items() if edits.applies_to(r)})
        notes += device_notes
    out = DurationChanges(changes, factor, notes, bands=bands, tables=tables)
    if edits.op_scale:
        for rank, trace, _ in select.each_rank(traces, select.Selection(ranks=sel.ranks)):
            if edits.applies_to(rank):
                out.ops[rank] = matching_cpu_rows(trace, edits.op_scale)
    for rank, ops in (edits.op_change or {}).items():
        out.ops[rank] = _merge_ops(out.ops.get(rank), ops)
    if edits.durations_from is not None:
        _add_durations_from(out, traces, edits, sel)
    _add_declared(out, traces, edits, sel)
    return out


def _add_declared(
    out: DurationChanges, traces: Union[Trace, TraceSet], edits: Edits, sel: select.Selection
) -> None:
    """The declared edits that have no Edits field (their values in edits.added), in the
    registry's order, on the edited ranks; with a device edit, on both ends of its band."""
    for edit in EDITS:
        values = {k: v for k, v in (edits.added or {}).items() if k in edit.keywords}
        if not values or edit.gpu_changes is None:
            continue
        for rank, trace, _ in select.each_rank(traces, select.Selection(ranks=sel.ranks)):
            if edits.applies_to(rank):
                change = {rank: edit.gpu_changes(trace, values)}
                for per_rank in (out.per_rank, *out.bands.values()):
                    add_changes(per_rank, change)


def _merge_ops(a: Optional[RowFactors], b: RowFactors) -> RowFactors:
    """Two sets of op factors as one: the factors of a row in both multiply."""
    if a is None:
        return b
    rows = np.concatenate([a[0], b[0]])
    uniq, inv = np.unique(rows, return_inverse=True)
    factor = np.ones(len(uniq))
    np.multiply.at(factor, inv.reshape(-1), np.concatenate([a[1], b[1]]))
    return uniq, factor


def _other_traces(edits: Edits) -> TraceSet:
    source = edits.durations_from
    if isinstance(source, (Trace, TraceSet)):
        return select.as_traceset(source)
    if not os.path.exists(source):
        raise ValueError(f"Edits.durations_from: no such file or folder: {os.fspath(source)!r}")
    return select.as_traceset(load_dir(source) if os.path.isdir(source) else load(source))


def _add_durations_from(
    out: DurationChanges, traces: Union[Trace, TraceSet], edits: Edits, sel: select.Selection
) -> None:
    """durations_from: rank r takes its durations from the other traces' rank r, or from
    the other trace when it holds one rank."""
    other = _other_traces(edits)
    tables = []
    for rank, trace, _ in select.each_rank(traces, select.Selection(ranks=sel.ranks)):
        if not edits.applies_to(rank):
            continue
        if rank in other.ranks:
            source = other[rank]
        elif len(other) == 1:
            source = other[other.ranks[0]]
        else:
            out.notes.append(f"durations_from: rank {rank} is not in the other traces; unchanged")
            continue
        assert edits.match is not None  # checked with durations_from
        pairing = pair_durations(rank, trace, source, edits.match)
        out.ops[rank] = _merge_ops(out.ops.get(rank), pairing.ops)
        for per_rank in (out.per_rank, *out.bands.values()):
            add_changes(per_rank, {rank: pairing.gpu})
        tables.append(pairing.table)
    out.pairing = pa.concat_tables(tables) if tables else PAIRING_SCHEMA.empty_table()
    out.notes += pairing_notes(out.pairing, source_name(edits.durations_from))
