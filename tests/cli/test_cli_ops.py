"""`hta-fast ops` and `hta-fast predict` on a real trace that names its GPU (an A100)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import hta_fast
from hta_fast.analysis.ops import roofline
from hta_fast.cli import cli
from hta_fast.model.predict import predict
from tests.cli.test_cli import one_error_line, run_subprocess


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def control(traces_dir):
    return traces_dir / "hta" / "trace_diff" / "control"


def test_ops_json_equals_the_analyses(traces_dir):
    res = run("ops", str(control(traces_dir)), "--format", "json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert {"roofline", "roofline.kernels", "op_table", "op_table.no_model"} <= set(doc["tables"])
    expected = roofline.roofline(hta_fast.load_dir(control(traces_dir)))
    assert doc["tables"]["roofline"] == expected.table.to_pylist()
    assert any(row["bound"] in ("compute", "memory") for row in doc["tables"]["roofline"])


def test_ops_table_and_files(traces_dir, tmp_path):
    res = run("ops", str(control(traces_dir)), "--limit", "3", "--prefix", "aten::")
    assert res.exit_code == 0 and "roofline (" in res.output and "op_table (" in res.output
    res = run("ops", str(control(traces_dir)), "--format", "parquet", "-o", str(tmp_path))
    assert res.exit_code == 0
    assert (tmp_path / "roofline.parquet").is_file() and (tmp_path / "op_table.parquet").is_file()


def test_predict_equals_the_model(traces_dir):
    res = run("predict", str(control(traces_dir)), "--device", "V100-SXM2", "--format", "json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert "predict.events" not in doc["tables"]
    expected = predict(hta_fast.load_dir(control(traces_dir)), "V100-SXM2")
    assert doc["tables"]["predict"] == expected.table.to_pylist()


def test_predict_unknown_device_is_one_line(traces_dir):
    res = run_subprocess("predict", str(control(traces_dir)), "--device", "NoSuchGPU-9000")
    assert res.returncode == 2
    assert "NoSuchGPU-9000" in one_error_line(res.stderr)


@pytest.mark.parametrize(
    "relative",
    [
        "param_dlrm_8rank",
        "hta/trace_diff/control/control.json.gz",
        "modern/flux1_iteration/iteration_0.json.gz",
    ],
)
def test_ops_fits_120_columns_and_wide_shows_every_column(traces_dir, relative):
    path = str(traces_dir / relative)
    res = CliRunner().invoke(cli, ["-q", "ops", path])
    assert res.exit_code == 0, res.output
    tables = [line for line in res.output.splitlines() if not line.startswith("note")]
    assert max(len(line) for line in tables) <= 120
    wide = CliRunner().invoke(cli, ["-q", "ops", "--wide", "--limit", "3", path])
    assert "achieved_flops" in wide.output and "peak_bandwidth" in wide.output
    assert "achieved_flops" not in res.output
