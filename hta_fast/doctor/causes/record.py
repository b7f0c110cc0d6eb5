"""A cause of lost GPU time, declared once: the record every part of the doctor reads (the
ranking, the model's savings, the gate, the text and JSON output, docs/doctor.md)."""

from __future__ import annotations

import dataclasses
from typing import Callable, Optional, Sequence

from ...model.whatif.edits import Edits
from ...traceset import TraceSet
from ..views.context import RankView
from ..views.estimate import Estimate
from ..views.thresholds import Thresholds


@dataclasses.dataclass
class Examination:
    """What a cause's heuristic and edit read: the ranks' views, the thresholds, the traces
    and steps asked for, and the estimates of the causes examined before it (Cause.needs)."""

    views: list[RankView]
    th: Thresholds
    traces: TraceSet
    steps: Optional[Sequence[int]]
    found: dict[str, Estimate] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Cause:
    """key         the name users write (--fail-on, JSON `cause`)
    name        what it is, in a few words
    thresholds  the Thresholds fields its verdict reads (every cause: min_share)
    evidence    the evidence fields its findings may carry
    heuristic   Examination -> Estimate: its cost per rank and step from the idle gaps and
                events it sits in, with evidence, top events, title and advice
    edit        Examination -> the what-if edit that removes it (None from it: nothing to
                remove in these traces); None here: the model cannot edit this cause, and
                its saving is "not modelled"
    edit_text   what the edit removes, or why the model cannot edit it
    edit_limits what the edit leaves, said where the heuristic cost and the model's saving
                differ by more than SAVINGS_DIFFER
    needs       causes whose estimates the heuristic reads (examined first)
    owners      the owners of the step's GPU time (model.path.owners.OWNERS) that are this
                cause, where one set of them is: the finding's owned_ns_per_step reads them
    """

    key: str
    name: str
    thresholds: tuple[str, ...]
    evidence: tuple[str, ...]
    heuristic: Callable[[Examination], Estimate]
    edit: Optional[Callable[[Examination], Optional[Edits]]]
    edit_text: str
    edit_limits: str = ""
    needs: tuple[str, ...] = ()
    owners: tuple[str, ...] = ()
