"""Slow, obviously correct models of the hta_fast.ops kernels, and input strategies.

Two kinds of model: per-nanosecond set membership (small integer ranges only) and enumeration of
the elementary segments between sorted breakpoints (any int64, Python ints never overflow).
"""

from __future__ import annotations

import math
from collections import defaultdict
from fractions import Fraction

from hypothesis import settings
from hypothesis import strategies as st

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

PROPERTY = settings(max_examples=200, deadline=None, derandomize=True)


# --- strategies ---------------------------------------------------------------------------
def intervals(max_size: int = 12, lo: int = -15, hi: int = 15, max_len: int = 12):
    """(start, end) pairs on a small range: ties, touching, nested, zero-length and reversed."""
    return st.lists(
        st.tuples(st.integers(lo, hi), st.integers(-3, max_len)).map(lambda p: (p[0], p[0] + p[1])),
        max_size=max_size,
    )


def grouped_intervals(max_size: int = 16, n_groups: int = 3):
    return st.lists(
        st.tuples(st.integers(0, n_groups - 1), st.integers(-10, 10), st.integers(-3, 10)).map(
            lambda p: (p[0], p[1], p[1] + p[2])
        ),
        max_size=max_size,
    )


def extreme_intervals(max_size: int = 10, near_max: bool = True):
    """Intervals within 64 ns of one end of the int64 range (never past it)."""
    offset = st.integers(0, 64)
    if near_max:
        pair = st.tuples(offset, offset).map(lambda p: (INT64_MAX - p[0], INT64_MAX - p[1]))
    else:
        pair = st.tuples(offset, offset).map(lambda p: (INT64_MIN + p[0], INT64_MIN + p[1]))
    return st.lists(pair, max_size=max_size)


def columns(rows, k: int):
    return [[r[i] for r in rows] for i in range(k)]


# --- per-nanosecond models ------------------------------------------------------------------
def covered(pairs) -> set[int]:
    out: set[int] = set()
    for s, e in pairs:
        out.update(range(s, e))
    return out


def runs(points: set[int]) -> list[tuple[int, int]]:
    """Maximal runs of consecutive integers as [start, end) intervals, sorted."""
    out: list[tuple[int, int]] = []
    for t in sorted(points):
        if out and out[-1][1] == t:
            out[-1] = (out[-1][0], t + 1)
        else:
            out.append((t, t + 1))
    return out


def class_sweep_by_ns(pairs, classes, n_classes: int) -> list[int]:
    res = [0] * (1 << n_classes)
    live = [(s, e, c) for (s, e), c in zip(pairs, classes) if e > s]
    if not live:
        return res
    for t in range(min(s for s, _, _ in live), max(e for _, e, _ in live)):
        mask = 0
        for s, e, c in live:
            if s <= t < e:
                mask |= 1 << c
        res[mask] += 1
    return res


# --- breakpoint models (any int64) ------------------------------------------------------------
def union_by_breakpoints(pairs) -> list[tuple[int, int]]:
    live = [(s, e) for s, e in pairs if e > s]
    cuts = sorted({t for p in live for t in p})
    out: list[tuple[int, int]] = []
    for a, b in zip(cuts, cuts[1:]):
        if any(s <= a and b <= e for s, e in live):
            if out and out[-1][1] == a:
                out[-1] = (out[-1][0], b)
            else:
                out.append((a, b))
    return out


def class_sweep_by_breakpoints(pairs, classes, n_classes: int) -> list[int]:
    res = [0] * (1 << n_classes)
    live = [(s, e, c) for (s, e), c in zip(pairs, classes) if e > s]
    cuts = sorted({t for s, e, _ in live for t in (s, e)})
    for a, b in zip(cuts, cuts[1:]):
        mask = 0
        for s, e, c in live:
            if s <= a and b <= e:
                mask |= 1 << c
        res[mask] += b - a
    return res


# --- gaps -------------------------------------------------------------------------------------
def gaps_by_holes(rows) -> list[tuple[int, int, int, int]]:
    """(group, start, end, next_row), from the holes in each group's coverage.

    A hole is a maximal run of uncovered nanoseconds between a group's first start and its
    furthest end; zero-length events (end <= start) are points that split holes. The event that
    ends a gap is the first, by (end clamped to start, row), of those starting at the gap's end.
    """
    by_group = defaultdict(list)
    for row, (g, s, e) in enumerate(rows):
        by_group[g].append((s, max(s, e), row))
    out = []
    for g in sorted(by_group):
        ev = by_group[g]
        cov = covered((s, e) for s, e, _ in ev)
        lo, hi = min(s for s, _, _ in ev), max(e for _, e, _ in ev)
        holes = runs(set(range(lo, hi)) - cov)
        points = sorted({s for s, e, _ in ev if s == e})
        for a, b in holes:
            cuts = [a] + [p for p in points if a < p < b] + [b]
            for x, y in zip(cuts, cuts[1:]):
                nxt = min((e, row) for s, e, row in ev if s == y)[1]
                out.append((g, x, y, nxt))
    return out


# --- step functions ---------------------------------------------------------------------------
def step_counter_model(rows):
    """rows of (group, ts, delta) -> sorted list of (group, ts, value after ts)."""
    total = defaultdict(int)
    for g, t, d in rows:
        total[(g, t)] += d
    out, value, prev_g = [], 0, None
    for g, t in sorted(total):
        if g != prev_g:
            value, prev_g = 0, g
        value += total[(g, t)]
        out.append((g, t, value))
    return out


def weighted_stats_by_ns(rows, ends, quantiles, thresholds):
    """rows sorted by (group, ts) of (group, ts, value); ends: one per group (ascending).

    Expands each group's step function to one value per nanosecond of its window.
    """
    by_group = defaultdict(list)
    for g, t, v in rows:
        by_group[g].append((t, v))
    out = []
    for g, end in zip(sorted(by_group), ends):
        pts = by_group[g]
        samples = []
        for i, (t, v) in enumerate(pts):
            nxt = pts[i + 1][0] if i + 1 < len(pts) else end
            samples.extend([v] * (nxt - t))
        n = len(samples)
        r = {
            "group": g,
            "duration": end - pts[0][0],
            "change_point_mean": Fraction(sum(Fraction(v) for _, v in pts), len(pts)),
        }
        if n:
            srt = sorted(samples)
            r["mean"] = Fraction(sum(Fraction(v) for v in samples), n)
            r["std"] = math.sqrt(sum((Fraction(v) - r["mean"]) ** 2 for v in samples) / n)
            r["min"], r["max"] = srt[0], srt[-1]
            r["quantiles"] = [
                next(v for v in srt if Fraction(sum(1 for x in srt if x <= v), n) >= Fraction(q))
                for q in quantiles
            ]
        r["time_at_or_above"] = [sum(1 for v in samples if v >= th) for th in thresholds]
        out.append(r)
    return out
