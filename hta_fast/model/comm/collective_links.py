"""Each rank's communication kernels tied to the collective they take part in.

hta_fast.analysis.collectives matches collectives across ranks (the n-th collective of a
process group on one rank is the n-th on every other rank) from the ranks' summaries; the
summary lists a rank's communication kernels in the order hta_fast.loading.summary.collective_rows
gives, so each kernel's event row can be tied to its matched collective. The replay uses the
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
from ...loading.summary import collective_rows, summaries_of
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
    position = {
        (g, int(i)): k
        for k, (g, i) in enumerate(zip(table["group"].to_pylist(), table["index"].to_pylist()))
    }
    summaries = summaries_of(ts)
    per_rank = {}
    for rank in ts.ranks:
        own = summaries[rank].collectives
        rows = collective_rows(ts[rank])
        match = np.fromiter(
            (
                position[(g, int(i))]
                for g, i in zip(own["group"].to_pylist(), own["index"].to_pylist())
            ),
            np.int64,
            count=own.num_rows,
        )
        per_rank[rank] = RankCollectives(rows, match)
    return MatchedCollectives(
        result,
        per_rank,
        np.asarray(table["data_time"].to_numpy(), np.int64),
        np.asarray(table["ranks"].to_numpy(), np.int64),
    )
