"""hta_fast.build_info() tells what the compiled core was built with, and what it says holds:
the version is the package's, zstd input loads exactly when it says zstd is in, and the
simdjson kernel named is the one chosen at run time (simdjson lets the environment force one)."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys

import pytest

import hta_fast

TRACE = b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 2}]}'


def zstd_frame(data: bytes) -> bytes:
    """A zstd frame that stores `data` as one raw block: valid zstd with no compressor."""
    assert len(data) < 256  # the one-byte content size below
    magic = b"\x28\xb5\x2f\xfd"
    header = bytes([0x20, len(data)])  # single segment, content size in one byte, no checksum
    block = (1 | len(data) << 3).to_bytes(3, "little")  # the last block, raw
    return magic + header + block + data


def test_fields_and_their_types():
    info = hta_fast.build_info()
    assert set(info) == {
        "version",
        "gzip",
        "zstd",
        "simdjson_version",
        "simdjson_implementation",
    }
    assert info["version"] == hta_fast.__version__
    assert info["gzip"] in ("isal", "zlib")
    assert isinstance(info["zstd"], bool)
    assert re.fullmatch(r"\d+\.\d+\.\d+", info["simdjson_version"]), info
    assert info["simdjson_implementation"] not in ("", "unsupported"), info


def test_exported_from_the_package():
    assert "build_info" in hta_fast.__all__
    assert hta_fast.build_info() == hta_fast.build_info()  # a new dict each call, same content


def test_zstd_loads_exactly_when_built_in():
    data = zstd_frame(TRACE)
    if hta_fast.build_info()["zstd"]:
        assert hta_fast.load(data).events.num_rows == 1
    else:
        with pytest.raises(hta_fast.TraceFormatError, match="no zstd support"):
            hta_fast.load(data)


def test_gzip_loads_whichever_decoder():
    assert hta_fast.load(gzip.compress(TRACE)).events.num_rows == 1


def info_with(env_var: str, value: str) -> dict:
    code = "import json, hta_fast; print(json.dumps(hta_fast.build_info()))"
    env = {**os.environ, env_var: value}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_simdjson_implementation_is_the_one_active_at_run_time():
    # simdjson picks its kernel on first use from this CPU, unless the environment forces one;
    # "fallback" runs everywhere.
    assert info_with("SIMDJSON_FORCE_IMPLEMENTATION", "fallback")["simdjson_implementation"] == (
        "fallback"
    )
