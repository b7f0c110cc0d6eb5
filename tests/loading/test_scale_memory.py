"""Many ranks within memory: at most as many ranks load at once as their estimated peaks fit in
the budget (local threads, local processes' submission, each Dask worker), a rank bigger than
the budget still loads (alone), the JSON size of a compressed file from its trailer or frame
header, and the second load of a set coming from the Arrow cache (threads, Dask, the CLI)."""

from __future__ import annotations

import gzip
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import hta_fast
from hta_fast.cli import cli
from hta_fast.loading import executors, loader
from tests.support.kineto_builder import KinetoBuilder

RANKS = 6


def _rank_bytes(rank: int) -> bytes:
    b = KinetoBuilder(rank=rank, world_size=RANKS)
    b.step(0, 0, 10_000)
    for j in range(40):
        b.kernel(f"gemm_{rank}_{j:03d}", 10 + j * 20, 100 + j * 50, 40)
    return b.to_bytes()


@pytest.fixture()
def ranks(tmp_path: Path) -> Path:
    folder = tmp_path / "set"
    folder.mkdir()
    for r in range(RANKS):
        (folder / f"rank{r}.json").write_bytes(_rank_bytes(r))
    return folder


class InFlight:
    """read_trace counted: how many run at once (each held a little so that they overlap)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, hold_s: float = 0.05):
        self.now = self.most = self.calls = 0
        self._lock = threading.Lock()
        real = executors.read_trace

        def counted(path: str, options: dict) -> hta_fast.Trace:
            with self._lock:
                self.now += 1
                self.calls += 1
                self.most = max(self.most, self.now)
            try:
                time.sleep(hold_s)
                return real(path, options)
            finally:
                with self._lock:
                    self.now -= 1

        monkeypatch.setattr(executors, "read_trace", counted)


def _budget_for(folder: Path, ranks_at_once: float) -> int:
    return int(max(executors.load_estimate(str(f)) for f in folder.iterdir()) * ranks_at_once)


def test_threads_load_as_many_ranks_at_once_as_fit(ranks, monkeypatch):
    budget = _budget_for(ranks, 2.5)
    monkeypatch.setattr(executors, "available_memory", lambda: budget)
    counter = InFlight(monkeypatch)
    traces = hta_fast.load_dir(ranks, max_workers=RANKS)
    assert traces.ranks == list(range(RANKS))
    assert counter.calls == RANKS
    assert counter.most == 2  # the budget, not the six threads, set it


def test_a_rank_bigger_than_the_budget_loads_alone(ranks, monkeypatch):
    monkeypatch.setattr(executors, "available_memory", lambda: 1)
    counter = InFlight(monkeypatch)
    assert len(hta_fast.load_dir(ranks, max_workers=RANKS)) == RANKS
    assert counter.most == 1


def test_without_a_reading_there_is_no_bound(ranks, monkeypatch):
    monkeypatch.setattr(executors, "available_memory", lambda: None)
    counter = InFlight(monkeypatch, hold_s=0.2)
    hta_fast.load_dir(ranks, max_workers=RANKS)
    assert counter.most > 2


def test_budget_waits_and_releases():
    budget = executors.MemoryBudget(lambda: 100)
    budget.acquire(60)
    started = threading.Event()

    def second() -> None:
        with budget.hold(60):
            started.set()

    t = threading.Thread(target=second)
    t.start()
    assert not started.wait(0.2)  # 60 + 60 > 100: it waits
    budget.release(60)
    assert started.wait(2)
    t.join()
    assert budget.most_in_flight == 1 and budget.in_flight == 0


def test_processes_are_submitted_within_the_budget(ranks, monkeypatch, tmp_path):
    seen: list[int] = []
    real = executors.MemoryBudget

    class Watched(real):  # type: ignore[misc, valid-type]
        def acquire(self, nbytes: int) -> None:
            super().acquire(nbytes)
            seen.append(self.in_flight)

    monkeypatch.setattr(executors, "MemoryBudget", Watched)
    budget = _budget_for(ranks, 1.5)
    monkeypatch.setattr(executors, "available_memory", lambda: budget)
    ds = hta_fast.load_dir(ranks, executor="processes", dataset=str(tmp_path / "ds"), max_workers=3)
    assert ds.ranks == list(range(RANKS))
    assert seen and max(seen) == 1  # one rank's estimate fits, not two: one at a time


def test_json_size_of_compressed_files(ranks, tmp_path):
    data = _rank_bytes(0)
    gz = tmp_path / "rank0.json.gz"
    gz.write_bytes(gzip.compress(data))
    assert executors.json_size(str(gz)) == len(data)  # the trailer's ISIZE
    assert executors.json_size(str(ranks / "rank0.json")) == len(data)
    pa = pytest.importorskip("pyarrow")
    zst = tmp_path / "rank0.json.zst"
    zst.write_bytes(pa.compress(data, codec="zstd", asbytes=True))
    assert executors.json_size(str(zst)) == len(data)  # the frame's content size
    # a frame without its content size: an estimate from the compressed size
    assert executors._zstd_content_size(b"\x28\xb5\x2f\xfd\x00\x58") is None


class Parses:
    """Parses of JSON counted (loader._read: not called when a load comes from the cache)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        self.calls = 0
        self._lock = threading.Lock()
        real = loader._read

        def counted(*args, **kwargs):  # noqa: ANN002, ANN003
            with self._lock:
                self.calls += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(loader, "_read", counted)


def test_second_load_of_a_set_comes_from_the_cache(ranks, monkeypatch, tmp_path):
    parses = Parses(monkeypatch)
    cache = tmp_path / "cache"
    first = hta_fast.load_dir(ranks, cache=True, cache_dir=cache)
    assert parses.calls == RANKS
    second = hta_fast.load_dir(ranks, cache=True, cache_dir=cache)
    assert parses.calls == RANKS  # no JSON parsed the second time
    for r in first.ranks:
        assert second[r].events.equals(first[r].events)


def test_second_dask_load_comes_from_the_workers_cache(ranks, monkeypatch, tmp_path):
    distributed = pytest.importorskip("distributed")
    parses = Parses(monkeypatch)  # the workers are threads of this process
    budget = _budget_for(ranks, 2.5)
    monkeypatch.setenv(executors.BUDGET_ENV, str(budget))
    counter = InFlight(monkeypatch)
    writes: list[int] = []
    real_write = executors.write_rank

    def counted_write(trace, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003
        writes.append(trace.rank)
        return real_write(trace, *args, **kwargs)

    monkeypatch.setattr(executors, "write_rank", counted_write)
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=4, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        options = {"cache": True, "cache_dir": str(tmp_path / "cache")}
        first = hta_fast.load_dir(ranks, executor=client, dataset=str(tmp_path / "a"), **options)
        assert parses.calls == RANKS
        assert counter.most == 2  # four threads on the worker, the budget lets two load
        second = hta_fast.load_dir(ranks, executor=client, dataset=str(tmp_path / "b"), **options)
        assert parses.calls == RANKS  # the second run read the cache
        # and copied the rank's Parquet files kept beside it instead of encoding them again
        assert sorted(writes) == list(range(RANKS))
    assert second.summaries == first.summaries
    for r in first.ranks:
        for name in ("events", "kernel_args", "meta"):
            assert second[r].to_arrow(name).equals(first[r].to_arrow(name)), (r, name)
    reopened = hta_fast.open_dataset(str(tmp_path / "b"))
    assert reopened.summaries == first.summaries


def test_cli_cache_flag(ranks, monkeypatch, tmp_path):
    monkeypatch.setenv("HTA_FAST_CACHE_DIR", str(tmp_path / "cache"))
    parses = Parses(monkeypatch)
    runner = CliRunner()
    for _ in range(2):
        result = runner.invoke(cli, ["-q", "info", "--cache", str(ranks)])
        assert result.exit_code == 0, result.output
    assert parses.calls == RANKS  # the second command parsed nothing
    assert len(list((tmp_path / "cache").iterdir())) == RANKS
    # without the flag nothing is cached or read from it
    runner.invoke(cli, ["-q", "info", str(ranks)])
    assert parses.calls == 2 * RANKS
