"""The load cache (`load(..., cache=True)`): filled by several processes at once, rebuilt when
an entry is damaged, and not fooled by a file rewritten with its size and mtime kept."""

from __future__ import annotations

import multiprocessing
import os
import warnings
from pathlib import Path

import pytest

import hta_fast
from tests.support.kineto_builder import KinetoBuilder


def _trace_bytes(kernel: str, kernels: int = 30) -> bytes:
    b = KinetoBuilder()
    b.step(0, 0, 10_000)
    for j in range(kernels):
        b.kernel(f"{kernel}_{j:03d}", 10 + j * 20, 100 + j * 50, 40)
    return b.to_bytes()


def _entry(cache: Path) -> Path:
    (entry,) = [p for p in cache.iterdir() if not p.name.startswith(".")]
    return entry


def _fill(args: tuple[list[str], str, int]) -> list[str]:
    """One process: fills a fresh cache folder per round, in step with the other processes
    (they all miss at once); returns what went wrong."""
    files, cache_root, rounds = args
    problems = []
    for r in range(rounds):
        _BARRIER.wait()
        for f in files:
            try:
                t = hta_fast.load(f, cache=True, cache_dir=f"{cache_root}/{r}")
                if f"{Path(f).stem}_000" not in t.events.column("name").to_pylist():
                    problems.append(f"{f}: another trace's entry")
            except Exception as e:  # noqa: BLE001 - collected and reported by the test
                problems.append(f"{f}: {type(e).__name__}: {e}")
    return problems


_BARRIER = None


def _init(barrier) -> None:
    global _BARRIER
    _BARRIER = barrier


def test_several_processes_fill_the_cache_at_once(tmp_path):
    files = []
    for i in range(10):
        p = tmp_path / f"k{i}.json"
        p.write_bytes(_trace_bytes(f"k{i}"))
        files.append(str(p))
    cache = tmp_path / "cache"
    n, rounds = 4, 4
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(n)
    with ctx.Pool(n, initializer=_init, initargs=(barrier,)) as pool:
        problems = [p for r in pool.map(_fill, [(files, str(cache), rounds)] * n) for p in r]
    assert problems == []
    for r in range(rounds):
        entries = list((cache / str(r)).iterdir())
        assert len(entries) == len(files), sorted(p.name for p in entries)  # no leftovers
    for f in files:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            t = hta_fast.load(f, cache=True, cache_dir=cache / "0")
        assert t.events.equals(hta_fast.load(f).events)


def _truncate(p: Path) -> None:
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])


def _garble(p: Path) -> None:
    data = bytearray(p.read_bytes())
    for i in range(0, len(data), 7):
        data[i] ^= 0x5A
    p.write_bytes(bytes(data))


@pytest.mark.parametrize(
    "name, damage",
    [
        ("string_data.bin", _truncate),
        ("strings.arrow", _garble),
        ("events.arrow", _truncate),
        ("kernel_args.arrow", _garble),
        ("manifest.json", _garble),
        ("strings.arrow", lambda p: p.write_bytes(b"")),
    ],
)
def test_a_damaged_entry_is_rebuilt_with_a_warning(tmp_path, name, damage):
    src = tmp_path / "t.json"
    src.write_bytes(_trace_bytes("kern"))
    cache = tmp_path / "cache"
    expected = hta_fast.load(src)
    hta_fast.load(src, cache=True, cache_dir=cache)
    damage(_entry(cache) / name)
    with pytest.warns(UserWarning, match="damaged"):
        t = hta_fast.load(src, cache=True, cache_dir=cache)
    assert t.events.equals(expected.events) and t.kernel_args.equals(expected.kernel_args)
    written = (_entry(cache) / "manifest.json").stat().st_mtime_ns
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = hta_fast.load(src, cache=True, cache_dir=cache)
    assert again.events.equals(expected.events)
    assert (_entry(cache) / "manifest.json").stat().st_mtime_ns == written  # a hit: not rewritten


def test_a_rewrite_with_the_same_size_and_mtime_is_seen(tmp_path):
    src = tmp_path / "t.json"
    before, after = _trace_bytes("aaaa"), _trace_bytes("bbbb")
    assert len(before) == len(after)
    src.write_bytes(before)
    cache = tmp_path / "cache"
    hta_fast.load(src, cache=True, cache_dir=cache)
    st = src.stat()
    src.write_bytes(after)
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (src.stat().st_size, src.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    t = hta_fast.load(src, cache=True, cache_dir=cache)
    assert "bbbb_000" in t.events.column("name").to_pylist()
    assert t.events.equals(hta_fast.load(src).events)


def test_the_content_check_reads_only_the_ends_of_a_big_file(tmp_path):
    from hta_fast.loading import cache as cache_mod

    src = tmp_path / "big.bin"
    size = 5 << 20
    with open(src, "wb") as fh:
        fh.truncate(size)

    def digest() -> str:
        return cache_mod._source_identity(str(src))["head_tail_crc32"]

    first = digest()
    with open(src, "r+b") as fh:  # a byte in the middle: not read (ctime tells instead)
        fh.seek(size // 2)
        fh.write(b"x")
    assert digest() == first
    with open(src, "r+b") as fh:  # a byte in the last MiB: read
        fh.seek(size - 10)
        fh.write(b"x")
    assert digest() != first
