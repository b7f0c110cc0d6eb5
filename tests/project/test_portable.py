"""What the package does where a system lacks a Linux feature it uses, forced here on Linux:

- HTA_FAST_MMAP=0: plain files read with read(2), as where a file cannot be mapped (the core
  also falls back so when mmap fails);
- HTA_FAST_MADVISE=0: mapped pages are never dropped or hinted at, as where madvise lacks
  the advice (csrc/io/mapped_file.cc);
- hta_fast.guards.atomic_folder._RENAMEAT2 = None: a folder replaced by two renames, as off Linux
  or on a glibc without renameat2; and renameat2 refused by the filesystem;
- HTA_FAST_MALLOC_TUNING=0: the allocator left as it is, as off glibc.

Each gives the same result as the Linux path."""

from __future__ import annotations

import ctypes
import errno
import json
import os
import subprocess
import sys

import pytest

import hta_fast
from hta_fast.guards import atomic_folder

TABLES = ("events", "flows", "op_args", "meta_events", "steps")


def trace_text(n: int = 4000) -> bytes:
    events = []
    for i in range(n):
        events.append(
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": f"op{i % 300} é" if i % 5 else f"step{i}",
                "pid": 1,
                "tid": 1 + i % 3,
                "ts": 1000 + 7 * i,
                "dur": 5,
                "args": {"External id": i, "Input Dims": [[i % 5, 3]]},
            }
        )
        if i % 9 == 0:
            events.append(
                {"ph": "s", "cat": "ac2g", "id": i, "pid": 1, "tid": 1, "ts": 1000 + 7 * i}
            )
    # One event to a line, as the profiler writes them (the layout the mapped reader splits).
    body = ",\n  ".join(json.dumps(e) for e in events)
    return ('{"schemaVersion": 1, "traceEvents": [\n  ' + body + "\n]}").encode()


@pytest.fixture(scope="module")
def plain_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("portable") / "t.json"
    path.write_bytes(trace_text())
    return path


def assert_same_tables(got, ref):
    assert got.strings.equals(ref.strings)
    for table in TABLES:
        assert getattr(got, table).equals(getattr(ref, table)), table
    for column in ("name", "count"):  # the loader's counts
        assert got.stats[column].to_pylist() == ref.stats[column].to_pylist(), column


def test_plain_file_read_without_mapping(plain_file, monkeypatch):
    mapped = hta_fast.load(plain_file, threads=2, chunk_size=4096)
    assert mapped._raw.timings["mapped_parts"] > 0, "the reference load should be mapped"
    monkeypatch.setenv("HTA_FAST_MMAP", "0")
    read = hta_fast.load(plain_file, threads=2, chunk_size=4096)
    assert read._raw.timings["mapped_parts"] == 0, "HTA_FAST_MMAP=0 still mapped the file"
    assert_same_tables(read, mapped)


def test_mapped_file_without_page_advice(plain_file, monkeypatch):
    ref = hta_fast.load(plain_file, threads=2, chunk_size=4096)
    monkeypatch.setenv("HTA_FAST_MADVISE", "0")
    got = hta_fast.load(plain_file, threads=2, chunk_size=4096)
    assert got._raw.timings["mapped_parts"] > 0
    assert_same_tables(got, ref)


def folder_with(path, name: str, text: str) -> str:
    os.makedirs(path)
    with open(os.path.join(path, name), "w") as f:
        f.write(text)
    return str(path)


def assert_replaced(tmp_path, target: str) -> None:
    assert sorted(os.listdir(target)) == ["new.txt"]
    assert os.listdir(tmp_path) == [os.path.basename(target)], "a staging folder was left"


def test_install_without_renameat2(tmp_path, monkeypatch):
    monkeypatch.setattr(atomic_folder, "_RENAMEAT2", None)
    target = folder_with(tmp_path / "data", "old.txt", "old")
    new = folder_with(tmp_path / ".data.writing", "new.txt", "new")
    assert atomic_folder.exchange(new, target) is False  # nothing moved
    assert sorted(os.listdir(target)) == ["old.txt"]
    atomic_folder.install(new, target)
    assert_replaced(tmp_path, target)


@pytest.mark.parametrize("refusal", [errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP])
def test_install_where_the_filesystem_refuses_the_exchange(tmp_path, monkeypatch, refusal):
    def refusing_renameat2(*args):
        ctypes.set_errno(refusal)
        return -1

    monkeypatch.setattr(atomic_folder, "_RENAMEAT2", refusing_renameat2)
    target = folder_with(tmp_path / "data", "old.txt", "old")
    new = folder_with(tmp_path / ".data.writing", "new.txt", "new")
    assert atomic_folder.exchange(new, target) is False
    atomic_folder.install(new, target)
    assert_replaced(tmp_path, target)


def test_no_renameat2_off_linux(monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    assert atomic_folder._renameat2() is None


def test_load_with_the_allocator_untuned(plain_file):
    # The tuning runs once, when the core is imported: a process of its own.
    code = (
        "import sys, hta_fast; t = hta_fast.load(sys.argv[1]); "
        "print(t.events.num_rows, t.flows.num_rows)"
    )
    counts = []
    for setting in ("1", "0"):
        env = {**os.environ, "HTA_FAST_MALLOC_TUNING": setting}
        out = subprocess.run(
            [sys.executable, "-c", code, str(plain_file)], env=env, capture_output=True, text=True
        )
        assert out.returncode == 0, out.stderr
        counts.append(out.stdout.split())
    assert counts[0] == counts[1]
