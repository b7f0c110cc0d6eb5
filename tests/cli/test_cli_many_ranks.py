"""Text output on 200 ranks summarises: `doctor` and `info` show a few ranks and how many
more, `analyze` a limited table and how to see every row; --json keeps everything."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from hta_fast.cli import cli
from tests.doctor.test_doctor_many_ranks import many_rank_builders

RANKS = 200
FILE_LINE = re.compile(r"^rank \d+: ", re.M)


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """200 ranks, rank 37 computing 30 % more than the others."""
    out = tmp_path_factory.mktemp("many_ranks")
    for b in many_rank_builders(RANKS, slow=37):
        (out / f"rank-{b.rank}.pt.trace.json").write_bytes(b.to_bytes())
    return out


def test_doctor_text_names_a_few_ranks_and_how_many_more(folder):
    res = run("doctor", str(folder))
    assert res.exit_code == 1, res.output  # rank_imbalance is above threshold
    assert "rank 37 is slowest" in res.output
    where = [line.strip() for line in res.output.splitlines() if "where: ranks" in line]
    assert where and all(len(line) < 200 for line in where)
    # Every rank but 37 waits for it.
    assert "where: ranks 0, 1, 2, 3, 4, 5, 6, 7 ... and 191 more" in res.output


def test_doctor_json_keeps_every_rank(folder):
    doc = json.loads(run("doctor", "--json", str(folder)).output)
    imb = next(f for f in doc["findings"] if f["cause"] == "rank_imbalance")
    assert len(imb["ranks"]) == RANKS - 1 and 37 not in imb["ranks"]
    assert imb["evidence"]["slowest_rank"] == 37
    assert len(doc["ranks"]) == RANKS


def test_info_text_is_cut_with_a_count_and_json_is_whole(folder):
    res = run("info", str(folder))
    assert res.exit_code == 0
    assert res.output.startswith(f"{RANKS} rank(s)")
    assert "... 180 more rows (--limit 0 shows all; --json lists every rank)" in res.output
    assert "... and 192 more rank(s)" in res.output
    assert len(FILE_LINE.findall(res.output)) == 8
    every = run("info", "--limit", "0", str(folder)).output
    assert len(FILE_LINE.findall(every)) == RANKS
    assert len(json.loads(run("info", "--json", str(folder)).output)["ranks"]) == RANKS


def test_analyze_table_with_a_row_per_rank_is_cut(folder):
    res = run("analyze", str(folder), "-a", "stragglers")
    assert res.exit_code == 0, res.output
    assert f"stragglers ({RANKS} rows)" in res.output
    assert f"... {RANKS - 20} more rows (--limit 0 shows all" in res.output
