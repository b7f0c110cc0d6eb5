"""The edits that change GPU event durations by ns rather than by a factor, per rank, merged into
one (event rows, ns) pair per rank: the bandwidth edit (hta_fast.model.whatif.bandwidth_edit),
another GPU (hta_fast.model.whatif.device_edit) and the edits' own duration_change."""

from __future__ import annotations

import dataclasses
from typing import Mapping, Optional, Union

import numpy as np

from ...frame import select
from ...trace import Trace
from ...traceset import TraceSet
from ..comm.collective_links import MatchedCollectives
from .bandwidth_edit import collective_bandwidth_factors
from .device_edit import device_changes
from .edits import Edits

Changes = dict[int, tuple[np.ndarray, np.ndarray]]


@dataclasses.dataclass
class DurationChanges:
    """per_rank: (event rows, ns added to each one's duration); factor: per matched
    collective, what its time moving data is multiplied by (None without a bandwidth edit);
    notes from the edits that made them."""

    per_rank: Changes
    factor: Optional[np.ndarray]
    notes: list[str]


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
) -> DurationChanges:
    """Every rank's duration changes under these edits (matched: the traces' collectives,
    needed by a bandwidth edit). The device edit applies on the edited ranks only."""
    changes: Changes = {}
    factor = None
    notes: list[str] = []
    if edits.changes_bandwidth:
        assert matched is not None
        factor, bw_notes = collective_bandwidth_factors(
            matched,
            scale=edits.collective_bandwidth,
            busbw_gbps=edits.collective_busbw_gbps,
            cost=edits.collective_cost,
        )
        changes = comm_changes(matched, factor)
        notes += bw_notes
    add_changes(changes, edits.duration_change or {})
    if edits.device is not None:
        on_device, device_notes = device_changes(
            traces,
            edits.device,
            source_device=edits.source_device,
            devices_file=edits.devices_file,
            allow_tf32=edits.allow_tf32,
            selection=select.Selection(ranks=sel.ranks),
        )
        add_changes(changes, {r: c for r, c in on_device.items() if edits.applies_to(r)})
        notes += device_notes
    return DurationChanges(changes, factor, notes)
