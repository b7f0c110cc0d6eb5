"""Replacing a dataset (write_dataset(overwrite=True), `hta-fast convert --overwrite`): only a
folder hta_fast wrote is removed, and a writer killed at any moment leaves the old dataset or
the new one at the path, never a mix or nothing."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import hta_fast
from hta_fast.cli import cli
from hta_fast.guards import atomic_folder
from hta_fast.loading import dataset
from hta_fast.loading.dataset import open_dataset, write_dataset
from tests.support.kineto_builder import KinetoBuilder


def _trace_file(folder: Path, rank: int, kernels: int) -> Path:
    b = KinetoBuilder(rank=rank, world_size=2)
    b.step(0, 0, 10_000)
    for j in range(kernels):
        b.kernel(f"kernel_{j}", 10 + j * 20, 100 + j * 50, 40)
    path = folder / f"rank{rank}.json"
    path.write_bytes(b.to_bytes())
    return path


@pytest.fixture
def sources(tmp_path):
    """(old, new): one rank of 3 kernels; two ranks of 7: easy to tell apart once read back."""
    folder = tmp_path / "traces"
    folder.mkdir()
    old = [_trace_file(folder, 0, 3)]
    new = [_trace_file(folder, 0, 7), _trace_file(folder, 1, 7)]
    return old, new


def _which(path: Path, old: list[Path], new: list[Path]) -> str:
    """ "old" or "new": the dataset at path read back in full; fails on anything else."""
    assert not (path / "_writing").exists(), sorted(p.name for p in path.iterdir())
    ds = open_dataset(str(path))
    for name, files in (("old", old), ("new", new)):
        traces = hta_fast.load_dir([str(f) for f in files])
        if ds.ranks == traces.ranks:
            for r in ds:
                assert ds[r].events.equals(traces[r].events), (name, r)
            return name
    raise AssertionError(f"ranks {ds.ranks}: neither the old dataset nor the new one")


def test_a_folder_that_merely_holds_a_manifest_is_left_alone(tmp_path, sources):
    traces = hta_fast.load_dir([str(f) for f in sources[0]])
    for marker in ("manifest.json", "_writing"):
        mine = tmp_path / f"project-{marker}"
        (mine / "src").mkdir(parents=True)
        (mine / "src" / "important.py").write_text("keep me")
        (mine / marker).write_text('{"name": "some other tool"}')
        with pytest.raises(FileExistsError, match="refusing"):
            write_dataset(traces, str(mine), overwrite=True)
        assert (mine / "src" / "important.py").read_text() == "keep me"
        assert sorted(p.name for p in mine.iterdir()) == sorted([marker, "src"])


def test_convert_refuses_a_folder_that_is_not_a_dataset(tmp_path, sources):
    mine = tmp_path / "project"
    (mine / "src").mkdir(parents=True)
    (mine / "src" / "important.py").write_text("keep me")
    (mine / "manifest.json").write_text("{}")
    res = CliRunner().invoke(cli, ["convert", str(sources[0][0]), "-o", str(mine), "--overwrite"])
    assert res.exit_code == 2
    assert "not a dataset written by hta_fast" in res.output and "refusing" in res.output
    assert (mine / "src" / "important.py").read_text() == "keep me"


def test_a_dataset_with_files_of_someone_else_is_not_replaced(tmp_path, sources):
    traces = hta_fast.load_dir([str(f) for f in sources[0]])
    out = tmp_path / "ds"
    write_dataset(traces, str(out))
    assert dataset.is_ours(str(out))
    (out / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="refusing"):
        write_dataset(traces, str(out), overwrite=True)
    assert (out / "notes.txt").exists()


def test_a_half_written_dataset_of_an_older_version_is_recognised_by_its_layout(tmp_path, sources):
    old, new = sources
    out = tmp_path / "ds"
    write_dataset(hta_fast.load_dir([str(f) for f in old]), str(out))
    # What an older version left after a failed load: an empty marker, no manifest.
    (out / "manifest.json").unlink()
    (out / "_writing").write_text("")
    assert dataset.is_ours(str(out))
    (out / "events" / "stray.txt").write_text("not a part")
    assert not dataset.is_ours(str(out))
    (out / "events" / "stray.txt").unlink()
    write_dataset(hta_fast.load_dir([str(f) for f in new]), str(out), overwrite=True)
    assert _which(out, old, new) == "new"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["format"] == "hta_fast.parquet_dataset"


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2", "two renames"])
def test_replacing_leaves_nothing_beside_the_dataset(tmp_path, sources, monkeypatch, exchange):
    """With the atomic exchange, and where the system has none (two renames)."""
    if not exchange:
        monkeypatch.setattr(atomic_folder, "exchange", lambda a, b: False)
    old, new = sources
    out = tmp_path / "ds"
    write_dataset(hta_fast.load_dir([str(f) for f in old]), str(out))
    write_dataset(hta_fast.load_dir([str(f) for f in new]), str(out), overwrite=True)
    assert _which(out, old, new) == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds", "traces"]


# A writer that replaces the dataset and dies (os._exit: no cleanup, as with kill -9) at the
# point named by its first argument; "loop" replaces it over and over until it is killed.
CHILD = """
import os, shutil, sys
import hta_fast
from hta_fast.guards import atomic_folder
from hta_fast.loading import dataset

point, out, n_old = sys.argv[1], sys.argv[2], int(sys.argv[3])
files = sys.argv[4:]
old = hta_fast.load_dir(files[:n_old])
new = hta_fast.load_dir(files[n_old:])

def die(*args, **kwargs):
    os._exit(9)

if point == "while-writing":  # one rank's files written, the others not
    real = dataset.write_rank
    dataset.write_rank = lambda *a, **k: (real(*a, **k), die())
elif point == "before-swap":  # the new dataset complete beside the old one
    atomic_folder.install = die
elif point == "after-swap":  # the new one in place, the old one not yet removed
    shutil.rmtree = die
elif point == "aside":  # where a swap by two renames would have moved the old one aside
    renames = []
    real_rename = os.rename
    def rename(a, b):
        renames.append(a)
        if len(renames) == 2:
            die()
        real_rename(a, b)
    os.rename = rename
print("ready", flush=True)
if point == "loop":
    while True:
        dataset.write_dataset(new, out, overwrite=True)
        dataset.write_dataset(old, out, overwrite=True)
dataset.write_dataset(new, out, overwrite=True)
"""


def _child(point: str, out: Path, old: list[Path], new: list[Path]) -> subprocess.Popen:
    files = [str(f) for f in old + new]
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, point, str(out), str(len(old)), *files],
        stdout=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize(
    "point, expect",
    [("while-writing", "old"), ("before-swap", "old"), ("after-swap", "new"), ("aside", "new")],
)
def test_a_writer_killed_at_each_step_leaves_the_old_or_the_new_dataset(
    tmp_path, sources, point, expect
):
    if point == "aside" and atomic_folder._RENAMEAT2 is None:
        pytest.skip("no atomic exchange here: the two renames leave a moment with no folder")
    old, new = sources
    out = tmp_path / "ds"
    write_dataset(hta_fast.load_dir([str(f) for f in old]), str(out))
    child = _child(point, out, old, new)
    child.communicate(timeout=120)
    assert child.returncode == (0 if point == "aside" else 9)  # "aside": no second rename
    assert _which(out, old, new) == expect
    # What the killed writer left beside the dataset is hidden and named for it.
    assert all(p.name.startswith(".ds.writing-") for p in tmp_path.iterdir() if p.name[0] == ".")
    # and the next writer replaces the dataset as usual
    write_dataset(hta_fast.load_dir([str(f) for f in new]), str(out), overwrite=True)
    assert _which(out, old, new) == "new"


def test_a_writer_killed_at_random_moments_leaves_a_whole_dataset(tmp_path, sources):
    old, new = sources
    out = tmp_path / "ds"
    write_dataset(hta_fast.load_dir([str(f) for f in old]), str(out))
    rng = random.Random(7)
    seen = set()
    for _ in range(6):
        child = _child("loop", out, old, new)
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.0, 0.4))
        child.kill()
        child.communicate(timeout=60)
        seen.add(_which(out, old, new))
    assert seen <= {"old", "new"}


def test_the_process_executor_replaces_a_dataset_atomically(tmp_path, sources, monkeypatch):
    """load_dir(executor="processes", dataset=...) writes beside the path and swaps: while the
    ranks are written the old dataset is still whole at the path; a failure leaves it there."""
    old, new = sources
    target = tmp_path / "ds"
    write_dataset(hta_fast.load_dir([str(f) for f in old]), str(target))
    seen = []
    real = hta_fast.loading.executors.run_processes

    def spying(files, where, *args, **kwargs):
        seen.append((where, _which(target, old, new)))  # the old dataset, untouched
        return real(files, where, *args, **kwargs)

    monkeypatch.setattr(hta_fast.loading.executors, "run_processes", spying)
    ds = hta_fast.load_dir(
        [str(f) for f in new], executor="processes", dataset=str(target), overwrite=True
    )
    ((where, state),) = seen
    assert state == "old" and Path(where).parent == tmp_path and Path(where) != target
    assert ds.ranks == [0, 1] and _which(target, old, new) == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds", "traces"]

    def failing(*args, **kwargs):
        raise RuntimeError("a worker died")

    monkeypatch.setattr(hta_fast.loading.executors, "run_processes", failing)
    with pytest.raises(RuntimeError, match="a worker died"):
        hta_fast.load_dir(
            [str(f) for f in old], executor="processes", dataset=str(target), overwrite=True
        )
    assert _which(target, old, new) == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds", "traces"]
