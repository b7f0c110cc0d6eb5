"""Load time grows linearly with the size of the largest event.

An event larger than the loader's read block is carried from block to block until its end
is read; carrying it by copying (or searching) the bytes seen so far again for every block
made one event of 256 MB take 50 s. The check compares two sizes four times apart: linear
time gives a ratio near 4, the quadratic carry one near 16. Small blocks (chunk_size) make
the quadratic cost show at sizes that load in a fraction of a second.
"""

from __future__ import annotations

import time

import pytest

import hta_fast

SMALL_MB, LARGE_MB = 8, 32
BLOCK = 1 << 16


def one_huge_event(mb: int, filler: str) -> bytes:
    """A small event, then one whose name is `mb` MiB of `filler`, then another small one."""
    name = filler * ((mb << 20) // len(filler))
    return (
        '{"traceEvents":[{"ph":"X","name":"a","pid":1,"tid":1,"ts":0,"dur":1},'
        f'{{"ph":"X","name":"{name}","pid":1,"tid":1,"ts":1,"dur":1}},'
        '{"ph":"X","name":"b","pid":1,"tid":1,"ts":2,"dur":1}]}'
    ).encode()


def best_seconds(text: bytes, runs: int = 3, **kw) -> float:
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        t = hta_fast.load(text, **kw)
        best = min(best, time.perf_counter() - t0)
    assert t.events["name"].to_pylist()[::2] == ["a", "b"]
    return best


# "a": the fast splitter finds no boundary inside the event; "},{": it finds false ones, and
# the file is read again by the exact scanner, which carries the event the same way.
@pytest.mark.parametrize("filler", ["a", "},{"])
@pytest.mark.parametrize("threads", [1, 2])
def test_load_time_linear_in_the_largest_event(filler, threads):
    small = one_huge_event(SMALL_MB, filler)
    large = one_huge_event(LARGE_MB, filler)
    t_small = best_seconds(small, threads=threads, chunk_size=BLOCK)
    t_large = best_seconds(large, threads=threads, chunk_size=BLOCK)
    ratio = t_large / t_small
    assert ratio < 10, (
        f"{LARGE_MB} MiB event: {t_large:.3f} s, {SMALL_MB} MiB: {t_small:.3f} s "
        f"(ratio {ratio:.1f}; linear is about {LARGE_MB // SMALL_MB})"
    )


def test_huge_event_read_whole():
    text = one_huge_event(SMALL_MB, "},{")
    t = hta_fast.load(text, chunk_size=BLOCK, threads=2)
    assert t.events["name"].to_pylist()[1] == "},{" * ((SMALL_MB << 20) // 3)
    assert t.events["ts"].to_pylist() == [0, 1000, 2000]
