"""Each rank's communication kernels tied to the collective they take part in.

hta_fast.analysis.collectives matches collectives across ranks (by their Comms Id, else
their sequence number, else the n-th collective of a process group on one rank is the n-th
on every other rank) from the ranks' summaries; its per_rank table lists a rank's
communication kernels in the order hta_fast.loading.summary.collective_rows gives, each with
its matched collective, so each kernel's event row is tied to it. The replay uses the
tie both ways: to change a collective's time moving data on every rank that ran it, and to
hold each rank's end of a collective until the last rank has reached it.
"""

from __future__ import annotations

import dataclasses
from typing import Union

import numpy as np

from ...analysis.collectives import collectives
from ...frame.result import Result
from ...frame.select import as_traceset
from ...loading.summary import collective_rows
from ...trace import Trace
from ...traceset import TraceSet


@dataclasses.dataclass
class RankCollectives:
    """One rank's communication kernels: rows (event rows, start order) and match (the
    position of the collective each one takes part in, in MatchedCollectives.result's
    table)."""

    rows: np.ndarray
    match: np.ndarray


@dataclasses.dataclass
class MatchedCollectives:
    """result: hta_fast.analysis.collectives' Result (one row per matched collective:
    group, index, collective, ranks, bytes, data_time, ...); per_rank: each rank's kernels
    tied to those rows; data_time and ranks: the table's columns as numpy."""

    result: Result
    per_rank: dict[int, RankCollectives]
    data_time: np.ndarray
    ranks: np.ndarray


def match_collectives(traces: Union[Trace, TraceSet]) -> MatchedCollectives:
    """The collectives of these traces matched across ranks, tied to each rank's kernels."""
    ts = as_traceset(traces)
    result = collectives(ts)
    table = result.table
    per = result["per_rank"]
    rank = per["rank"].to_numpy()
    gpu = np.asarray(per["side"].to_pylist(), object) == "gpu"
    match = per["match"].to_numpy()
    per_rank = {}
    for r in ts.ranks:
        # the summary's GPU collectives of a rank, in its order: collective_rows' order
        mine = match[gpu & (rank == r)]
        per_rank[r] = RankCollectives(collective_rows(ts[r]), np.asarray(mine, np.int64))
    return MatchedCollectives(
        result,
        per_rank,
        np.asarray(table["data_time"].to_numpy(), np.int64),
        np.asarray(table["ranks"].to_numpy(), np.int64),
    )
