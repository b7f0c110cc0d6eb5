"""The chains of one group of steps (one per rank, hta_fast.model.graph.walk) replayed as measured
and edited: together when the ranks' collectives are tied (hta_fast.model.replay.cross_rank),
else each alone."""

from __future__ import annotations

import dataclasses
from typing import Optional, Sequence

import numpy as np

from ..comm.collective_links import MatchedCollectives
from ..graph.chain import Chain
from ..replay.cross_rank import LinkedWindow, Together, link_windows, replay_together
from .changes import DurationChanges
from .edits import Edits
from .weights import edited_weights


@dataclasses.dataclass
class Replayed:
    """One rank's chain replayed as measured (base) and edited: the weights and node times of
    each, and code_of (collective end node -> collective code, for the collectives tied to
    other ranks)."""

    chain: Chain
    w_base: np.ndarray
    base_times: np.ndarray
    w_edit: np.ndarray
    times: np.ndarray
    code_of: dict[int, int]


@dataclasses.dataclass
class GroupReplay:
    """ranks: each rank's replays; holder: per collective code, the rank that reached it last
    in the edited replay (empty alone); linked / together: the linked chains and their
    edited joint replay (None alone)."""

    ranks: list[Replayed]
    holder: np.ndarray
    linked: Optional[list[LinkedWindow]] = None
    together: Optional[Together] = None


def _linked_weights(
    chain: Chain, lw: LinkedWindow, edits: Edits, w_edit: np.ndarray, factor: Optional[np.ndarray]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The edited and base weights of a chain whose collectives are tied to other ranks'
    (its collective kernels take their time moving data, as edited), and their after_last."""
    se = lw.self_edges()
    plain = edited_weights(chain.graph, chain.trace, edits.on_rank(chain.rank))[se]
    measured = chain.graph.weight[se].astype(np.float64)
    # The class / name / category factors the kernel got, applied to its data time.
    k = np.divide(plain.astype(np.float64), measured, out=np.ones(len(se)), where=measured > 0)
    f = factor[lw.match] if factor is not None else np.ones(len(se))
    data = np.rint(lw.data * f * k).astype(np.int64)
    w_edit = w_edit.copy()
    w_edit[se] = data
    w_base = chain.graph.weight.copy()
    w_base[se] = lw.data
    return w_edit, w_base, lw.after_last - lw.data + data


def replay_group(
    chains: Sequence[Chain],
    edits: Edits,
    changes: DurationChanges,
    matched: Optional[MatchedCollectives],
) -> GroupReplay:
    """These chains (one per rank, the same steps) replayed as measured and edited: together
    when `matched` is given (cross-rank), else each alone."""
    w_edit = [
        edited_weights(
            c.graph,
            c.trace,
            edits.on_rank(c.rank),
            changes.per_rank.get(c.rank),
            changes.ops.get(c.rank),
        )
        for c in chains
    ]
    if matched is None:
        return GroupReplay(
            [
                Replayed(c, c.graph.weight, c.graph.replay(), w, c.graph.replay(w), {})
                for c, w in zip(chains, w_edit)
            ],
            np.zeros(0, np.int64),
        )
    linked = link_windows([(c.rank, c.graph) for c in chains], matched)
    parts = [
        _linked_weights(c, lw, edits, w, changes.factor) for c, lw, w in zip(chains, linked, w_edit)
    ]
    w_edit = [p[0] for p in parts]
    w_base = [p[1] for p in parts]
    base_times = replay_together(linked, w_base).times
    together = replay_together(linked, w_edit, [p[2] for p in parts])
    codes = [dict(zip((2 * lw.comm + 1).tolist(), lw.match.tolist())) for lw in linked]
    ranks = [
        Replayed(c, wb, bt, we, t, code)
        for c, wb, bt, we, t, code in zip(chains, w_base, base_times, w_edit, together.times, codes)
    ]
    return GroupReplay(ranks, together.last_rank, linked, together)
