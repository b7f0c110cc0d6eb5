"""Uneven ranks from the trace generator: stragglers, slow links and jitter, checked on the
written files as loaded by hta_fast."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import hta_fast
from hta_fast import sync_calls, synth
from hta_fast.synth.variation import Variation

pytestmark = pytest.mark.skipif(
    not synth.DEFAULT_BASE.exists(), reason="the shared sample trace is not here"
)

RANKS = 4
SIZE_MB = 6  # the base's first step whole and part of the second


def _decode(column) -> np.ndarray:
    return np.array(column.combine_chunks().dictionary_decode().to_pylist(), dtype=object)


class Rank:
    """One written rank, loaded, as arrays in whole microseconds with its clock skew removed."""

    def __init__(self, path, rank: int, seed: int = 0) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            trace = hta_fast.load(str(path))
        self.stats = trace.stats.to_pylist()
        ev = trace.events
        skew = synth.rank_skew_us(seed, rank)
        self.ts = ev["ts"].to_numpy() // 1000 - skew
        self.dur = ev["dur"].to_numpy() // 1000
        self.kind = _decode(ev["kind"])
        cls = _decode(ev["kernel_class"])
        self.step = ev["step"].to_numpy(zero_copy_only=False)
        self.stream = ev["stream"].to_numpy(zero_copy_only=False)
        self.compute = (self.kind == "kernel") & (cls == "COMP")
        self.comm = (self.kind == "kernel") & (cls == "COMM")
        names = _decode(ev["name"])
        self.names = names
        self.partner = ev["partner"].fill_null(-1).to_numpy().astype(np.int64)
        is_step = np.array([n.startswith("ProfilerStep#") for n in names]) & (
            self.kind != "gpu_user_annotation"
        )
        order = np.argsort(self.ts[is_step])
        self.step_start = self.ts[is_step][order]
        self.step_end = (self.ts + self.dur)[is_step][order]

    def per_step(self, mask: np.ndarray) -> np.ndarray:
        steps = np.unique(self.step[self.compute])
        return np.array([self.dur[mask & (self.step == k)].sum() for k in steps], float)

    def comm_ends(self) -> np.ndarray:
        return np.sort((self.ts + self.dur)[self.comm])

    def comm_durs(self) -> np.ndarray:
        return self.dur[self.comm][np.argsort(self.ts[self.comm])]

    def overlaps(self) -> int:
        gpu = np.isin(self.kind, ["kernel", "memcpy", "memset"])
        n = 0
        for s in np.unique(self.stream[gpu]):
            on = gpu & (self.stream == s)
            order = np.argsort(self.ts[on], kind="stable")
            start, end = self.ts[on][order], (self.ts + self.dur)[on][order]
            n += int((start[1:] < end[:-1]).sum())
        return n

    def problems(self) -> list:
        return [
            (r["name"], r["count"]) for r in self.stats if r["count"] and r["severity"] != "info"
        ]


def _texts(paths) -> list[bytes]:
    """File contents with the folder (named in traceName) left out."""
    return [p.read_bytes().replace(str(p.parent).encode(), b"") for p in paths]


def _generate(out, size_mb=SIZE_MB, ranks=RANKS, **options) -> list[Rank]:
    paths = synth.generate(out, size_mb, ranks, **options)
    return [Rank(p, r, options.get("seed", 0)) for r, p in enumerate(paths)]


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    return _generate(tmp_path_factory.mktemp("plain"))


@pytest.fixture(scope="module")
def straggler(tmp_path_factory):
    return _generate(tmp_path_factory.mktemp("straggler"), stragglers={2: 1.5})


def _valid(ranks: list[Rank]) -> None:
    for r in ranks:
        assert r.problems() == []
        assert r.overlaps() == 0


def test_without_options_ranks_differ_only_by_skew(plain):
    _valid(plain)
    for r in plain[1:]:
        assert np.array_equal(r.ts, plain[0].ts) and np.array_equal(r.dur, plain[0].dur)


def test_factors_of_one_write_the_plain_files(tmp_path):
    a = synth.generate(tmp_path / "a", 0.5, 2)
    b = synth.generate(tmp_path / "b", 0.5, 2, stragglers={1: 1.0}, slow_links={0: 1.0})
    assert _texts(a) == _texts(b)


def test_straggler_compute_takes_factor_longer(plain, straggler):
    _valid(straggler)
    slow = straggler[2].per_step(straggler[2].compute)
    base = plain[0].per_step(plain[0].compute)
    np.testing.assert_allclose(slow / base, 1.5, rtol=1e-3)
    for r in (0, 1, 3):
        np.testing.assert_allclose(straggler[r].per_step(straggler[r].compute), base, rtol=1e-3)


def test_others_wait_for_the_straggler_in_collectives(plain, straggler):
    extra_compute = straggler[2].per_step(straggler[2].compute) - plain[0].per_step(
        plain[0].compute
    )
    own_comm = straggler[2].per_step(straggler[2].comm)
    for r in (0, 1, 3):
        waited = straggler[r].per_step(straggler[r].comm) - own_comm
        # The wait is the straggler's extra compute, less what it did during collectives and
        # after the last one written (work after a step's last collective is waited for in
        # the next step's first).
        assert waited.sum() > 0.3 * extra_compute.sum()
        assert waited.sum() <= extra_compute.sum()
    ends = np.array([r.comm_ends() for r in straggler])
    assert np.abs(ends - ends[2]).max() <= 2  # every collective ends together


def _blocking(r: Rank) -> np.ndarray:
    """The runtime calls that held the host: syncs, and the async copies that returned once
    their copy was done (to or from pageable memory)."""
    kinds = sync_calls.sync_kind_of_names([str(n) for n in r.names])
    end = r.ts + r.dur
    copy = (r.names == "cudaMemcpyAsync") & (r.partner >= 0)
    done = copy & (end[np.maximum(r.partner, 0)] <= end)
    return np.isin(kinds, sync_calls.BLOCKING) | done


def test_hosts_keep_their_pace_and_wait_in_blocking_calls(plain, straggler):
    """The host queues its work at the base's pace; a slower GPU or a wait in a collective
    reaches it only where it blocks on the GPU (the step-end read of the loss)."""
    base = plain[0]
    runtime = base.kind == "runtime"
    for r in straggler:
        assert np.array_equal(r.names, base.names)
        grew = runtime & (r.dur > base.dur)
        assert grew.any()
        assert np.all(_blocking(base)[grew]), set(base.names[grew & ~_blocking(base)])
        launches = base.names == "cudaLaunchKernel"
        np.testing.assert_array_equal(r.dur[launches], base.dur[launches])
    # The others' steps are longer than the base's by their wait in those calls.
    grew = straggler[0].step_end - straggler[0].step_start
    assert np.all(grew > base.step_end - base.step_start)


def test_slow_link_collectives_take_factor_longer(tmp_path, plain):
    ranks = _generate(tmp_path, slow_links={1: 2.0})
    _valid(ranks)
    base = plain[0].comm_durs()
    np.testing.assert_allclose(ranks[1].comm_durs(), 2 * base, atol=1)
    ends = np.array([r.comm_ends() for r in ranks])
    assert np.abs(ends - ends[1]).max() <= 2
    for r in (0, 2, 3):
        assert np.all(ranks[r].comm_durs() >= base)
        np.testing.assert_allclose(
            ranks[r].per_step(ranks[r].compute), plain[0].per_step(plain[0].compute), rtol=1e-3
        )


def test_jitter_stays_in_bounds_and_varies(tmp_path, plain):
    ranks = _generate(tmp_path, jitter_pct=10, seed=3)
    _valid(ranks)
    base = plain[0].per_step(plain[0].compute)
    ratios = np.array([r.per_step(r.compute) / base for r in ranks])
    assert np.all(ratios >= 0.9 - 1e-3) and np.all(ratios <= 1.1 + 1e-3)
    assert len(np.unique(np.round(ratios, 3))) == ratios.size  # each (rank, step) its own
    # The first step lies inside one segment of the model: its factor is the draw itself.
    drawn = Variation(jitter_pct=10, seed=3).compute_factors(RANKS, 2)
    np.testing.assert_allclose(ratios[:, 0], drawn[:, 0], rtol=2e-3)
    ends = np.array([r.step_end for r in ranks])
    assert np.abs(ends - ends[0]).max() <= 5


def test_jitter_is_deterministic_for_a_seed(tmp_path):
    a = synth.generate(tmp_path / "a", 0.5, 2, jitter_pct=5, seed=1)
    b = synth.generate(tmp_path / "b", 0.5, 2, jitter_pct=5, seed=1)
    c = synth.generate(tmp_path / "c", 0.5, 2, jitter_pct=5, seed=2)
    assert _texts(a) == _texts(b)
    assert [p.read_bytes() for p in a] != [p.read_bytes() for p in c]


def test_verify_holds_with_variation(tmp_path):
    synth.generate(tmp_path, 1, 3, stragglers={1: 1.3}, jitter_pct=5, verify=True)


def test_quiet_prints_no_line_per_file(tmp_path, capsys):
    args = ["--size-mb", "0.3", "--ranks", "3", "--out", str(tmp_path), "-q"]
    assert synth.main(args + ["--straggler", "1:1.2", "--slow-link", "2:1.5", "--jitter", "3"]) == 0
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "3 file(s)" in err
    assert len(list(tmp_path.glob("rank*.json"))) == 3


@pytest.mark.parametrize(
    "bad",
    [["--straggler", "2"], ["--slow-link", "x:2"], ["--straggler", "1:0"], ["--jitter", "100"]],
)
def test_bad_options_are_usage_errors(tmp_path, bad):
    with pytest.raises(SystemExit):
        synth.main(["--size-mb", "0.3", "--out", str(tmp_path)] + bad)


def test_a_late_gpu_catches_up_in_idle_gaps(plain, straggler):
    """The sample program is launch-bound: the straggler's step grows by less than its extra
    compute (its GPU finds work queued after each idle gap), and never starts a kernel before
    the host launched it. The first step is whole (the second is cut where the file ends)."""
    extra = straggler[2].per_step(straggler[2].compute) - plain[0].per_step(plain[0].compute)
    grew = (straggler[2].step_end - straggler[2].step_start) - (
        plain[0].step_end - plain[0].step_start
    )
    assert 0 < grew[0] < 0.9 * extra[0]
    r = straggler[2]
    gpu = np.isin(r.kind, ["kernel", "memcpy", "memset"]) & (r.partner >= 0)
    launch = r.partner[gpu]
    assert np.all(r.ts[gpu] >= r.ts[launch] + (plain[2].ts[gpu] - plain[2].ts[launch]))
