"""The doctor's rank_imbalance on many ranks: identical ranks with a little noise have no
straggler and no imbalance above threshold; one slow rank is named, with the others' wait."""

from __future__ import annotations

import dataclasses
import random
from typing import Optional

import pytest

from hta_fast import TraceSet
from hta_fast.doctor import diagnose
from tests.support import synthetic_traces as synth
from tests.support.kineto_builder import KinetoBuilder, traceset

COMPUTE_US = 7_000.0
KERNELS = 4
STEPS = 3


def many_ranks(n: int, **kw) -> TraceSet:
    return traceset(many_rank_builders(n, **kw))


def many_rank_builders(
    n: int,
    *,
    slow: Optional[int] = None,
    factor: float = 1.3,
    noise: float = 0.01,
    skew_us: float = 50.0,
    seed: int = 0,
) -> list[KinetoBuilder]:
    """n ranks that each compute COMPUTE_US (times 1 +- `noise`, uniformly; `factor` times
    more on rank `slow`) per step, then all-reduce until the slowest is done plus 1 ms: every
    collective ends at the same true time. Each rank's clock is off by up to `skew_us`."""
    rng = random.Random(seed)
    compute = [COMPUTE_US * (1 + rng.uniform(-noise, noise)) for _ in range(n)]
    if slow is not None:
        compute[slow] *= factor
    end = 100 + max(compute) + 1_000
    step_us = end + 500
    builders = []
    for rank in range(n):
        b = KinetoBuilder(rank=rank, world_size=n)
        skew = rng.uniform(0, skew_us)
        for s in range(STEPS):
            t0 = s * step_us + skew
            b.step(s, t0, step_us)
            piece = compute[rank] / KERNELS
            for j in range(KERNELS):
                b.kernel(
                    "sm90_xmma_gemm_bf16bf16_bf16f32", t0 + j * 10, t0 + 100 + j * piece, piece
                )
            start = 100 + compute[rank]
            b.nccl("allreduce", t0 + 50, t0 + start, end - start)
        builders.append(b)
    return builders


@pytest.fixture(scope="module")
def identical():
    return diagnose(many_ranks(128))


@pytest.fixture(scope="module")
def one_slow():
    return diagnose(many_ranks(128, slow=37))


def test_identical_ranks_have_no_straggler_and_no_imbalance(identical):
    f = identical.finding("rank_imbalance")
    assert not f.above_threshold, f.title
    assert f.evidence["stragglers"] == "none found"
    assert f.evidence["slow_ranks"] == "none found"
    assert f.evidence["slowest_rank"] == "none stands out"
    assert "no rank stands out" in f.title
    # Their noise (+-1 %) is all they wait for.
    assert f.share < 0.02


def test_one_slow_rank_is_named_with_the_others_wait(one_slow):
    f = one_slow.finding("rank_imbalance")
    assert f.above_threshold
    assert f.evidence["slowest_rank"] == 37
    assert f.evidence["slow_ranks"] == "37"
    assert f.evidence["stragglers"] == "37"  # the last to start the collective
    assert f.top_events[0]["name"] == "rank 37"
    assert "rank 37 is slowest" in f.title
    # It computes 30 % more: about 2.1 ms per step, which the others wait in the all-reduce.
    assert f.evidence["slowest_extra_work_ns_per_step"] == pytest.approx(
        0.3 * COMPUTE_US * 1e3, rel=0.05
    )
    assert f.evidence["waited_for_rank"] == 37 and f.evidence["waited_for_share"] > 0.9
    assert f.evidence["others_wait_for_it_ns_per_step"] == pytest.approx(
        0.3 * COMPUTE_US * 1e3, rel=0.1
    )
    # Every rank but the slow one waits.
    assert 37 not in f.ranks and len(f.ranks) == 127


def test_json_keeps_every_rank_and_text_cuts_the_list(one_slow):
    f = one_slow.to_dict()["findings"]
    imb = next(x for x in f if x["cause"] == "rank_imbalance")
    assert len(imb["ranks"]) == 127
    text = one_slow.to_text()
    where = next(line for line in text.splitlines() if line.strip().startswith("where: ranks"))
    assert where.strip().startswith("where: ranks 0, 1, 2, 3, 4, 5, 6, 7 ... and 119 more")


def test_two_ranks_still_name_the_slower_one():
    # With two ranks the whole set's MAD is half their difference: each rank is compared
    # with the other rank alone.
    f = diagnose(synth.rank_imbalance()).finding("rank_imbalance")
    assert f.evidence["slowest_rank"] == 0 and f.evidence["stragglers"] == "0"


def test_the_text_names_a_rank_that_stands_out_even_below_threshold(identical, one_slow):
    (f,) = [f for f in one_slow.findings if f.cause == "rank_imbalance"]
    below = dataclasses.replace(f, above_threshold=False)
    diag = dataclasses.replace(one_slow, findings=[below])
    assert "rank_imbalance" in diag.to_text() and "(rank 37 stands out)" in diag.to_text()
    assert "stands out)" not in identical.to_text()
