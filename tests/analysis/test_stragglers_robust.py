"""The robust straggler rule: high_outliers as a unit (one far value among identical ones is
flagged alone; scaling every value changes nothing; noise is never flagged), and
stragglers(rule="robust") on many generated ranks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hta_fast.analysis.stragglers import OUTLIER_MIN_MARGIN, high_outliers, stragglers
from tests.doctor.test_doctor_many_ranks import many_ranks

values = st.floats(min_value=1e-3, max_value=1e6, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(
    base=values,
    n=st.integers(min_value=1, max_value=300),
    factor=st.floats(min_value=1.2, max_value=100),
    at=st.integers(min_value=0, max_value=300),
)
def test_one_far_value_among_identical_ones_is_flagged_alone(base, n, factor, at):
    x = np.full(n, base)
    x = np.insert(x, at % (n + 1), base * factor)
    assert np.flatnonzero(high_outliers(x)).tolist() == [at % (n + 1)]


@settings(max_examples=200, deadline=None)
@given(
    x=st.lists(values, min_size=1, max_size=200),
    k=st.integers(min_value=-20, max_value=20),
)
def test_scaling_every_value_flags_the_same_ones(x, k):
    # A power of two scales exactly: a value on the boundary stays on it.
    a, c = np.array(x), 2.0**k
    assert high_outliers(a * c).tolist() == high_outliers(a).tolist()
    assert high_outliers(a * c, scale=c).tolist() == high_outliers(a, scale=1.0).tolist()


@settings(max_examples=100, deadline=None)
@given(
    n=st.integers(min_value=2, max_value=3000),
    noise=st.floats(min_value=0, max_value=OUTLIER_MIN_MARGIN / 3),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
)
def test_noise_below_the_margin_is_never_flagged(n, noise, seed):
    # Uniform noise of +-noise around 1: no value is more than 2 * noise above another,
    # under the margin of the others' median (at least 1 - noise).
    x = 1 + np.random.default_rng(seed).uniform(-noise, noise, n)
    assert not high_outliers(x).any()


def test_the_rule_on_hand_made_values():
    # Two values: each is compared with the other one.
    assert high_outliers([1.0, 1.3]).tolist() == [False, True]
    assert high_outliers([1.0, 1.04]).tolist() == [False, False]  # under the 5 % margin
    # A wide spread: 1.3 is within 3 robust sigmas of the others.
    assert not high_outliers([0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3]).any()
    # NaN is never flagged nor counted; too few values flag nothing.
    assert high_outliers([1.0, np.nan, 1.0, 2.0]).tolist() == [False, False, False, True]
    assert not high_outliers([]).any() and not high_outliers([5.0]).any()
    # The margin in the caller's unit: values near 0 (start delays in step times).
    assert high_outliers([0.0, 0.0, 0.0, 0.04], scale=1.0).tolist() == [False] * 4
    assert high_outliers([0.0, 0.0, 0.0, 0.06], scale=1.0).tolist() == [False] * 3 + [True]
    # Above 1,024 values the whole set's median and MAD are used: same answer.
    big = np.ones(2000)
    big[123] = 1.5
    assert np.flatnonzero(high_outliers(big)).tolist() == [123]


@pytest.mark.parametrize("n", [64, 256])
def test_identical_ranks_have_no_robust_straggler(n):
    ts = many_ranks(n, skew_us=100)
    r = stragglers(ts, rule="robust")
    assert r.params["stragglers"] == [] and r.params["rule"] == "robust"
    assert not r.to_pandas()["is_straggler"].any()
    # The reference rule names num_candidates ranks however alike they are.
    assert len(stragglers(ts).params["stragglers"]) == 2


def test_one_slow_rank_is_the_only_robust_straggler():
    ts = many_ranks(128, slow=37)
    r = stragglers(ts, rule="robust")
    assert r.params["stragglers"] == [37]
    df = r.to_pandas()
    assert df["rank"].iloc[0] == 37 and df["is_straggler"].sum() == 1
    assert df.loc[df["rank"] == 37, "straggler_steps"].item() == 3  # stood out in every step


def test_an_unknown_rule_is_an_error():
    with pytest.raises(ValueError, match="unknown straggler rule"):
        stragglers(many_ranks(2), rule="slowest")
