"""hta_fast.ops.group_gaps against a model built from the holes in each group's coverage."""

from __future__ import annotations

from hypothesis import given

from hta_fast import ops
from tests.support._ops_models import (
    INT64_MAX,
    INT64_MIN,
    PROPERTY,
    columns,
    gaps_by_holes,
    grouped_intervals,
)


def rows_of(g):
    return list(zip(g.group.tolist(), g.starts.tolist(), g.ends.tolist(), g.next_index.tolist()))


def test_known_gaps():
    #            0       1        2         3        4        5
    group = [1, 1, 1, 1, 2, 2]
    start = [30, 0, 12, 5, 100, 90]
    end = [40, 10, 20, 8, 110, 95]
    # group 1: [0,10) [5,8) nested, gap [10,12) ended by row 2, gap [20,30) by row 0
    # group 2: [90,95), gap [95,100) ended by row 4
    assert rows_of(ops.group_gaps(group, start, end)) == [
        (1, 10, 12, 2),
        (1, 20, 30, 0),
        (2, 95, 100, 4),
    ]


def test_zero_length_events_end_gaps():
    # a zero-length event at 15 splits the idle time [10, 20) into two gaps; one at 10 changes nothing
    g = ops.group_gaps([0, 0, 0, 0], [0, 15, 20, 10], [10, 15, 30, 10])
    assert rows_of(g) == [(0, 10, 15, 1), (0, 15, 20, 2)]


def test_ties_pick_shortest_then_first_row():
    g = ops.group_gaps([0, 0, 0, 0], [0, 10, 10, 10], [5, 20, 12, 12])
    assert rows_of(g) == [(0, 5, 10, 2)]


def test_reversed_event_is_a_point():
    # [25, 3) counts as zero-length at 25: it ends the gap at 25, and does not pull reach back
    g = ops.group_gaps([0, 0, 0], [0, 25, 30], [10, 3, 40])
    assert rows_of(g) == [(0, 10, 25, 1), (0, 25, 30, 2)]


def test_no_gap_before_first_or_after_last():
    assert rows_of(ops.group_gaps([0], [5], [10])) == []
    assert rows_of(ops.group_gaps([0, 0], [0, 10], [10, 20])) == []  # touching: zero-length gap


@PROPERTY
@given(grouped_intervals(max_size=14))
def test_matches_holes_model(rows):
    assert rows_of(ops.group_gaps(*columns(rows, 3))) == gaps_by_holes(rows)


def test_extreme_values():
    g = ops.group_gaps([0, 0, 0], [INT64_MIN, INT64_MAX - 1, 0], [INT64_MIN + 1, INT64_MAX, 0])
    assert rows_of(g) == [(0, INT64_MIN + 1, 0, 2), (0, 0, INT64_MAX - 1, 1)]


def touching_model(rows):
    """Gaps with touching=True, by doubling times: an event [a, b) covers the closed doubled
    range [2a, 2b - 1], a zero-length one the point 2a; a gap lies wherever the next start
    (doubled) exceeds the doubled reach, from (reach + 1) // 2 to the start."""
    out = []
    for g in sorted({r[0] for r in rows}):
        mine = sorted((s, max(s, e), i) for i, (gg, s, e) in enumerate(rows) if gg == g)
        reach = None
        for s, e, i in mine:
            if reach is not None and 2 * s > reach:
                out.append((g, (reach + 1) // 2, s, i))
            covered = 2 * e - 1 if e > s else 2 * s
            reach = covered if reach is None else max(reach, covered)
    return out


def test_touching_reports_zero_length_gaps():
    # [0,10) then [10,20): a zero-length gap at 10; a marker at 20 then [20,30): one gap, at 20
    g = ops.group_gaps([0, 0, 0, 0], [0, 10, 20, 20], [10, 20, 20, 30], touching=True)
    assert rows_of(g) == [(0, 10, 10, 1), (0, 20, 20, 2)]


def test_touching_gap_after_a_marker_has_its_full_length():
    # the marker at 20 covers 20 only: the gap after it is [20, 30), 10 long
    g = ops.group_gaps([1, 1, 1], [0, 20, 30], [10, 20, 40], touching=True)
    assert rows_of(g) == [(1, 10, 20, 1), (1, 20, 30, 2)]


@PROPERTY
@given(grouped_intervals(max_size=14))
def test_touching_matches_doubled_model(rows):
    got = rows_of(ops.group_gaps(*columns(rows, 3), touching=True))
    assert got == touching_model(rows)
    # without touching, the same gaps less the zero-length ones
    assert rows_of(ops.group_gaps(*columns(rows, 3))) == [r for r in got if r[1] < r[2]]
