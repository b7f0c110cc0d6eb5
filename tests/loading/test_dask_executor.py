"""load_dir on a real Dask LocalCluster (2 workers): the same answers as the local executor,
a worker killed mid-load, bad ranks reported with rank and file, and the message without Dask."""

from __future__ import annotations

import gzip
import os
import pickle
import shutil
import sys

import pytest

import hta_fast
from hta_fast import synth
from hta_fast.analysis import collectives as cross
from hta_fast.loading.dataset import open_dataset
from hta_fast.loading.summary import summarize
from hta_fast.trace import TABLES

distributed = pytest.importorskip("distributed")  # in the test extra: `make test` installs it

ANALYSES = (cross.collectives, cross.late_arrivals, cross.step_spread, cross.clock_offsets)
SKEW_SEED = 5


@pytest.fixture(scope="module")
def client():
    # Threads in one process keep the suite fast; the kill test below uses processes.
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        yield c


@pytest.fixture(scope="module")
def generated(tmp_path_factory, traces_dir):
    """32 small ranks from one real rank, each rank's clock skewed (synth.rank_skew_us)."""
    out = tmp_path_factory.mktemp("gen32")
    synth.generate(
        out,
        0.6,
        ranks=32,
        seed=SKEW_SEED,
        base=traces_dir / "hta" / "trace_filter" / "sampled_rank-0.json.gz",
    )
    return out


def assert_same(local, remote):
    assert remote.ranks == local.ranks
    for r in local.ranks:
        assert remote.summaries[r] == summarize(local[r]), r
    for analysis in ANALYSES:
        a, b = analysis(local), analysis(remote)
        assert b.table.equals(a.table), analysis.__name__
        assert b.tables.keys() == a.tables.keys()
        for k in a.tables:
            assert b.tables[k].equals(a.tables[k]), (analysis.__name__, k)
        assert b.notes == a.notes


def test_dlrm_on_dask_equals_local(client, traces_dir, tmp_path):
    folder = traces_dir / "param_dlrm_8rank"
    local = hta_fast.load_dir(folder)
    remote = hta_fast.load_dir(folder, executor=client, dataset=str(tmp_path / "ds"))
    assert isinstance(remote, hta_fast.TraceDataset) and remote.failed == []
    assert_same(local, remote)
    # What came back from the workers is the summaries, a small fraction of the tables.
    for r in local:
        sent = len(pickle.dumps(remote.summaries[r]))
        assert sent < local[r].events.nbytes / 20, (r, sent)
    for name in TABLES:  # per-rank tables come back from the dataset on demand
        assert remote[6].to_arrow(name).equals(local[6].to_arrow(name)), name
    # the same dataset opened afresh, summaries read from it
    assert_same(local, open_dataset(str(tmp_path / "ds")))


def test_generated_32_ranks_on_dask_equal_local(client, generated, tmp_path):
    local = hta_fast.load_dir(generated)
    remote = hta_fast.load_dir(generated, executor=client, dataset=str(tmp_path / "ds"))
    assert len(remote) == 32
    assert_same(local, remote)
    # By construction every rank runs the base's events shifted by its clock skew: the rank
    # with the largest skew is last at every collective, and the clock offsets are the skews.
    skew = {r: synth.rank_skew_us(SKEW_SEED, r) for r in range(32)}
    latest = max(skew, key=skew.get)
    late = cross.late_arrivals(remote)
    assert late.params["latest"] == latest
    assert late.table["times_last"][0].as_py() == cross.collectives(remote).table.num_rows > 0
    offsets = dict(
        zip(*(cross.clock_offsets(remote).table[c].to_pylist() for c in ("rank", "offset_ns")))
    )
    for r in range(32):
        assert offsets[r] - offsets[0] == pytest.approx((skew[r] - skew[0]) * 1000)


def test_processes_executor_equals_local(traces_dir, tmp_path):
    folder = traces_dir / "param_dlrm_8rank"
    remote = hta_fast.load_dir(
        folder, executor="processes", dataset=str(tmp_path / "ds"), max_workers=2
    )
    assert_same(hta_fast.load_dir(folder), remote)


def test_scheduler_address_from_the_environment(client, traces_dir, tmp_path, monkeypatch):
    files = sorted((traces_dir / "param_dlrm_8rank").iterdir())[:2]
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS", raising=False)
    with pytest.raises(ValueError, match="DASK_SCHEDULER_ADDRESS"):
        hta_fast.load_dir(files, executor="dask", dataset=str(tmp_path / "a"))
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", client.scheduler.address)
    ds = hta_fast.load_dir(files, executor="dask", dataset=str(tmp_path / "b"))
    assert ds.ranks == [0, 1]


def test_dask_needs_a_dataset(client, traces_dir):
    with pytest.raises(ValueError, match="dataset="):
        hta_fast.load_dir(traces_dir / "param_dlrm_8rank", executor=client)


@pytest.fixture()
def damaged(traces_dir, tmp_path):
    """The DLRM set copied to tmp with rank 3's file cut short."""
    folder = tmp_path / "dlrm"
    shutil.copytree(traces_dir / "param_dlrm_8rank", folder)
    bad = folder / "worker3.pt.trace.json.gz"
    text = gzip.decompress(bad.read_bytes())
    bad.write_bytes(gzip.compress(text[: len(text) // 2]))
    return folder, bad


@pytest.mark.parametrize("executor", ["threads", "dask"])
def test_truncated_rank_is_named_and_partial_loads_the_rest(damaged, client, tmp_path, executor):
    folder, bad = damaged
    kw = {"executor": client, "dataset": str(tmp_path / "ds")} if executor == "dask" else {}
    with pytest.raises(hta_fast.TraceFormatError) as err:
        hta_fast.load_dir(folder, **kw)
    message = str(err.value)
    assert err.value.rank == 3 and err.value.path == str(bad)
    assert "\n" not in message and message.startswith("rank 3: ") and str(bad) in message
    if executor == "dask":
        kw["overwrite"] = True
    with pytest.warns(UserWarning, match=r"rank 3: .*worker3\.pt\.trace\.json\.gz"):
        loaded = hta_fast.load_dir(folder, partial=True, **kw)
    assert list(loaded) == [0, 1, 2, 4, 5, 6, 7]
    if executor == "dask":
        assert [(r, p) for r, p, _ in loaded.failed] == [(3, str(bad))]


def test_missing_rank_file_is_named(client, traces_dir, tmp_path):
    files = [str(f) for f in sorted((traces_dir / "param_dlrm_8rank").iterdir())]
    gone = str(tmp_path / "worker8.pt.trace.json.gz")
    with pytest.raises(FileNotFoundError, match=r"rank 8: .*worker8\.pt\.trace\.json\.gz") as err:
        hta_fast.load_dir(files + [gone], executor=client, dataset=str(tmp_path / "ds"))
    assert err.value.filename == gone and "\n" not in str(err.value)
    with pytest.warns(UserWarning, match="rank 8"):
        ds = hta_fast.load_dir(
            files + [gone],
            executor=client,
            dataset=str(tmp_path / "ds"),
            partial=True,
            overwrite=True,
        )
    assert ds.ranks == list(range(8)) and ds.failed[0][:2] == (8, gone)


def test_without_dask_the_error_says_how_to_install(monkeypatch, traces_dir, tmp_path):
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(ImportError, match=r"pip install hta_fast\[dask\]"):
        hta_fast.load_dir(
            traces_dir / "param_dlrm_8rank", executor="dask", dataset=str(tmp_path / "ds")
        )


class KillFirstLoad(distributed.WorkerPlugin):
    """Kills the worker process as it starts the first load_rank task of the cluster's life
    (a marker file makes it once, whichever worker gets there first)."""

    def __init__(self, marker: str):
        self.marker = marker

    def transition(self, key, start, finish, **kwargs):
        name = key[0] if isinstance(key, tuple) else key
        if finish == "executing" and "load_rank" in str(name):
            try:
                fd = os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                return
            os.close(fd)
            os._exit(1)


@pytest.mark.slow  # starts a cluster and kills a worker
def test_worker_killed_mid_load(traces_dir, tmp_path):
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    folder = traces_dir / "param_dlrm_8rank"
    marker = str(tmp_path / "killed")
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        c.register_plugin(KillFirstLoad(marker))
        remote = hta_fast.load_dir(folder, executor=c, dataset=str(tmp_path / "ds"))
    assert os.path.exists(marker), "no worker was killed"
    assert_same(hta_fast.load_dir(folder), remote)


def test_inputs_and_dataset_by_fsspec_url(client, traces_dir):
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    folder = traces_dir / "param_dlrm_8rank"
    for r in (2, 5):
        name = f"worker{r}.pt.trace.json.gz"
        fs.pipe(f"/hta_fast_inputs/{name}", (folder / name).read_bytes())
    # the workers share this process's memory filesystem (processes=False)
    ds = hta_fast.load_dir(
        "memory://hta_fast_inputs",
        executor=client,
        dataset="memory://hta_fast_inputs_ds",
        overwrite=True,
    )
    assert ds.ranks == [2, 5]
    local = hta_fast.load(folder / "worker5.pt.trace.json.gz")
    assert ds[5].events.equals(local.events)
    assert ds.summaries[5].source == "memory://hta_fast_inputs/worker5.pt.trace.json.gz"


def test_convert_on_dask(client, traces_dir, tmp_path):
    from click.testing import CliRunner

    from hta_fast.cli import cli

    folder = traces_dir / "param_dlrm_8rank"
    out = tmp_path / "ds"
    res = CliRunner().invoke(
        cli, ["convert", str(folder), "-o", str(out), "--dask", client.scheduler.address]
    )
    assert res.exit_code == 0, res.output
    assert "8 rank(s)" in res.output and "on the cluster" in res.output
    ds = open_dataset(str(out))
    local = hta_fast.load_dir(folder)
    assert ds[4].events.equals(local[4].events)
    assert_same(local, ds)
