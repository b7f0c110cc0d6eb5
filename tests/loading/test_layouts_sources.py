"""The layouts' trace from every kind of source: a path, gzip (whatever its trailer says)
and zstd files, the zstd command line's output, and bytes-like objects load the same tables.
"""

from __future__ import annotations

import gzip
import shutil
import subprocess

import pytest

import hta_fast
from tests.support.layouts import CONFIGS, canonical, layout_texts


@pytest.fixture(scope="module")
def texts():
    return layout_texts()


def test_compressed_and_path_give_same_result(texts, tmp_path):
    text = texts["native"]
    ref = canonical(hta_fast.load(text), "native")
    plain = tmp_path / "t.json"
    plain.write_bytes(text)
    gz = tmp_path / "t.json.gz"
    gz.write_bytes(gzip.compress(text, compresslevel=9))
    for src in (plain, str(plain), gz, gz.read_bytes()):
        label = "gz bytes" if isinstance(src, bytes) else src
        for c in CONFIGS:
            assert canonical(hta_fast.load(src, **c), "native") == ref, (label, c)
    assert hta_fast.load(plain).meta.path == str(plain)
    # concatenated gzip members are one stream
    half = len(text) // 2
    two = gzip.compress(text[:half]) + gzip.compress(text[half:])
    assert canonical(hta_fast.load(two, chunk_size=256), "native") == ref


@pytest.mark.parametrize("isize", [0, 17, 1 << 31, (1 << 32) - 1])
def test_gzip_trailer_sizes_the_output_only(texts, tmp_path, isize):
    # The loader sizes its columns from the gzip trailer's ISIZE (the inflated size modulo
    # 2^32); a wrong, wrapped or forged one changes how much is reserved, never what loads.
    # A reader that checks ISIZE (zlib's does) may refuse the stream instead, clearly.
    text = texts["native"]
    ref = canonical(hta_fast.load(text), "native")
    data = bytearray(gzip.compress(text))
    data[-4:] = isize.to_bytes(4, "little")
    gz = tmp_path / "t.json.gz"
    gz.write_bytes(bytes(data))
    try:
        got = hta_fast.load(gz, threads=1)
    except hta_fast.TraceFormatError as e:
        assert "corrupt" in str(e) or "checksum" in str(e) or "length" in str(e), str(e)
        return
    assert canonical(got, "native") == ref


def test_zstd_gives_same_result(texts, tmp_path):
    zstandard = pytest.importorskip("zstandard", reason="the zstandard module is not installed")
    text = texts["native"]
    ref = canonical(hta_fast.load(text), "native")
    data = zstandard.ZstdCompressor(level=3).compress(text)
    p = tmp_path / "t.json.zst"
    p.write_bytes(data)
    for src in (p, data):
        for c in CONFIGS:
            assert canonical(hta_fast.load(src, **c), "native") == ref


def test_zstd_cli_gives_same_result(texts, tmp_path):
    # The same check through the zstd command-line tool, where the module is missing.
    zstd = shutil.which("zstd")
    if zstd is None:
        pytest.skip("no zstd command-line tool")
    text = texts["native"]
    ref = canonical(hta_fast.load(text), "native")
    src = tmp_path / "t.json"
    src.write_bytes(text)
    subprocess.run([zstd, "-q", "-19", str(src), "-o", str(tmp_path / "t.json.zst")], check=True)
    data = (tmp_path / "t.json.zst").read_bytes()
    assert data[:4] == b"\x28\xb5\x2f\xfd"
    for src in (tmp_path / "t.json.zst", data):
        for c in CONFIGS:
            assert canonical(hta_fast.load(src, **c), "native") == ref


def test_bytes_like_sources_agree(texts):
    text = texts["line"]
    ref = canonical(hta_fast.load(text), "line")
    assert canonical(hta_fast.load(bytearray(text)), "line") == ref
    assert canonical(hta_fast.load(memoryview(text)), "line") == ref
