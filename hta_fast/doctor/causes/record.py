"""A cause of lost GPU time, declared once: the record every part of the doctor reads (the
ranking, the model's savings, the gate, the text and JSON output, docs/doctor.md's tables of
causes, which docs/gen_doctor.py writes from the records)."""

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
class CauseDoc:
    """A cause's rows in docs/doctor.md (Markdown, each one line of a table cell):

    means   what it means (the table of causes)
    cost    how its cost per step is estimated, and its evidence
    helps   what usually helps
    edit    the edit the model replays for it, or why there is none (the table of edits)
    """

    means: str
    cost: str
    helps: str
    edit: str


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
    doc         its rows in docs/doctor.md (CauseDoc)
    edit_limits what the edit leaves, said where the heuristic cost and the model's saving
                differ by more than SAVINGS_DIFFER
    needs       causes whose estimates the heuristic reads (examined first)
    owners      the owners of the step's GPU time (model.path.owners.OWNERS) that are this
                cause, where one set of them is: the finding's owned_ns_per_step reads them
    name_patterns  event-name patterns its heuristic and edit match, to match for all ranks
                at once before the causes run (derived.name_flags remembers them), beside
                the idle-gap split's own (views.gap_causes.NAME_PATTERNS)
    gap_parts   the parts of the idle-gap split (views.gap_causes.GapSplit) charged to it:
                the split is one ordered rule, and each part is charged to one cause at most
    rank_lists  evidence fields whose value lists ranks ("3, 17, 40"): whole in JSON,
                shortened in the text
    stands_out  the evidence field naming the rank that stands out (an int; text where none
                does): a finding under its threshold still names that rank in the text
    """

    key: str
    name: str
    thresholds: tuple[str, ...]
    evidence: tuple[str, ...]
    heuristic: Callable[[Examination], Estimate]
    edit: Optional[Callable[[Examination], Optional[Edits]]]
    edit_text: str
    doc: CauseDoc
    edit_limits: str = ""
    needs: tuple[str, ...] = ()
    owners: tuple[str, ...] = ()
    name_patterns: tuple[str, ...] = ()
    gap_parts: tuple[str, ...] = ()
    rank_lists: tuple[str, ...] = ()
    stands_out: str = ""
