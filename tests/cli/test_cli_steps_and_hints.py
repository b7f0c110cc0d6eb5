"""The command line's --steps and --ranks (a range is kept as bounds, never listed), and its
hints in command-line terms (--device, not the library's device=)."""

from __future__ import annotations

import resource
import subprocess
import sys

import pytest
from click.testing import CliRunner

from hta_fast.cli import cli
from hta_fast.cli import loading as cli_loading
from tests.support.kineto_builder import KinetoBuilder

HUGE = "0:99999999999"


def _trace(tmp_path, device="NVIDIA A100-SXM4-80GB"):
    b = KinetoBuilder()
    b.devices[0]["name"] = device
    for s in range(3):
        t0 = s * 10_000
        b.step(s, t0, 10_000)
        b.cpu_op("aten::mm", t0 + 10, 200)
        b.kernel("ampere_sgemm_128x64_nn", t0 + 20, t0 + 300, 2_000)
    path = tmp_path / "t.json"
    path.write_bytes(b.to_bytes())
    return path


def _limited(*args: str) -> subprocess.CompletedProcess:
    """hta-fast in a process that may not grow past 3 GB: a listed 0:99999999999 would."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    return subprocess.run(
        [sys.executable, "-m", "hta_fast", *args],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=limit,
    )


def test_steps_are_ranges_not_lists():
    steps = cli_loading.parse_steps(f"{HUGE},5,200000000000")
    assert steps.count() == 10**11 + 1
    assert steps.bounds == ((0, 99_999_999_999), (200_000_000_000, 200_000_000_000))
    assert steps.pick([3, -1, 99_999_999_999, 100_000_000_000, 200_000_000_000]) == [
        3,
        99_999_999_999,
        200_000_000_000,
    ]
    assert cli_loading.parse_steps("2:4,3:6,8").bounds == ((2, 6), (8, 8))


def test_a_huge_step_range_selects_the_steps_there_are(tmp_path):
    path = _trace(tmp_path)
    huge = _limited("analyze", str(path), "-a", "steps", "--steps", HUGE)
    assert huge.returncode == 0, huge.stderr
    some = _limited("analyze", str(path), "-a", "steps", "--steps", "0:2")
    assert huge.stdout == some.stdout
    res = _limited("ops", str(path), "--steps", HUGE)
    assert res.returncode == 0, res.stderr


def test_a_huge_rank_range_is_refused_at_once(tmp_path):
    res = _limited("analyze", str(_trace(tmp_path)), "--ranks", HUGE)
    assert res.returncode == 2
    assert "at most 1,048,576" in res.stderr


@pytest.mark.parametrize("command", ["analyze", "ops"])
def test_an_absent_step_still_selects_nothing(tmp_path, command):
    args = ["-a", "steps"] if command == "analyze" else []
    res = CliRunner().invoke(cli, [command, str(_trace(tmp_path)), *args, "--steps", "7:9"])
    assert res.exit_code == 0, res.output
    assert "(0 rows)" in res.output


def test_ops_hint_names_the_option(tmp_path):
    res = CliRunner().invoke(cli, ["ops", str(_trace(tmp_path, device="Mystery GPU 9000"))])
    assert res.exit_code == 0, res.output
    assert "not in the device table" in res.output
    assert "pass --device" in res.output and "device=" not in res.output


def test_predict_error_names_the_option(tmp_path):
    path = _trace(tmp_path, device="Mystery GPU 9000")
    res = CliRunner().invoke(cli, ["predict", str(path), "--device", "H100-SXM5"])
    assert res.exit_code == 2
    assert "pass --source-device" in res.output and "source_device=" not in res.output
