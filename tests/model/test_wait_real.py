"""The shared real traces, each with what a careful reading of it finds (modern/README.md,
and param_dlrm_8rank's rank 7 that the others wait for): the doctor (`doctor --json`), the
critical path (`critical-path --by-event`), the owners and the report tell that one story."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import NamedTuple, Optional

import pytest
from click.testing import CliRunner

import hta_fast
import hta_fast.doctor
from hta_fast.cli.app import cli
from hta_fast.model.path.owners import OWNERS, wait_owners
from tests.support.paths import SHARED_TRACES

SHARED = SHARED_TRACES


class Reading(NamedTuple):
    """top_owner: the owner of most of the time the GPU did not compute (the owners, and
    the category holding the most of the paths besides GPU compute); cause: the doctor's
    first finding (None: none above threshold); saving: its model saving per step (ns,
    within 10 %), None where not removable, ... where the README gives no figure."""

    top_owner: str
    cause: Optional[str]
    saving: object = ...


READINGS = {
    # stream 3 held 463 ms by work queued before recording began: not removable
    "modern/sglang_decode": Reading("gpu_unrecorded_work", "unrecorded_gpu_work", None),
    # the first aten::conv1d's 1,344.8 ms, its first launch loading the module: once
    "modern/particle_transformer": Reading("one_off_stall", "one_off_stall", 1_337_000_000),
    # allocator churn keeps the GPU idle, not launches
    "modern/mi300_ddp_resnet18": Reading("cpu_bound", "memory_sync"),
    # host-bound eager decode, 13.7 % busy
    "modern/b200_eager": Reading("cpu_bound", "launch_bound"),
    "modern/flux1_iteration": Reading("cpu_bound", "launch_bound"),
    # the trace opens with the previous batch's work still running: the doctor leaves that
    # head out of the step (and says so); the recorded decode pass is healthy
    "modern/vllm_decode_full": Reading("gpu_unrecorded_work", None),
    # launches lead; the ranks wait 5.03 ms a step for rank 7 (test_wait_ranks)
    "param_dlrm_8rank": Reading("cpu_bound", "launch_bound"),
}


def _path(rel: str) -> Path:
    path = SHARED / rel
    if not path.is_dir():
        pytest.skip(f"{path} not present")
    return path


def _json(args: list[str]) -> dict:
    res = CliRunner().invoke(cli, ["-q", *args])
    assert res.exit_code in (0, 1), res.output  # the doctor exits 1 where its gate fails
    return json.loads(res.stdout)


@pytest.mark.parametrize("rel", sorted(READINGS))
def test_doctor_path_and_owners_tell_one_story(rel):
    path, want = _path(rel), READINGS[rel]
    doc = _json(["doctor", "--json", str(path)])
    above = [f for f in doc["findings"] if f["above_threshold"]]
    if want.cause is None:
        assert above == [] and doc["headline"]["top_cause"] is None
    else:
        assert above[0]["cause"] == want.cause
        assert doc["headline"]["top_cause"]["cause"] == want.cause
        if want.saving is None:
            assert above[0]["saving_ns_per_step"] is None
            assert "not removable" in above[0]["saving_edit"]
        elif want.saving is not ...:
            assert above[0]["saving_ns_per_step"] == pytest.approx(want.saving, rel=0.1)
    on_path = _json(["critical-path", "--by-event", "--format", "json", str(path)])
    rows = on_path["tables"]["critical_path.on_path"]
    per: dict[str, float] = {}
    for r in rows:
        per[r["bound_by"]] = per.get(r["bound_by"], 0) + r["duration"]
    assert min(per.values()) >= 0
    per.pop("gpu_compute_bound", None)
    assert max(per, key=per.get) == want.top_owner
    owned = wait_owners(hta_fast.load_dir(str(path))).to_pandas()[OWNERS].sum()
    assert owned.drop("gpu_compute_bound").idxmax() == want.top_owner


@pytest.mark.slow  # one report per trace
@pytest.mark.parametrize("rel", sorted(READINGS))
def test_the_report_opens_with_the_same_cause(rel, tmp_path):
    path, want = _path(rel), READINGS[rel]
    out = tmp_path / "r.html"
    res = CliRunner().invoke(cli, ["-q", "report", str(path), "-o", str(out), "--cdn"])
    assert res.exit_code == 0, res.output
    page = out.read_text()
    top = re.search(r"top cause: (\w+)", page)
    if want.cause is None:
        assert top is None
    else:
        assert top is not None and top.group(1) == want.cause


def test_a_decode_pass_replayed_from_before_its_window_counts_as_in_graphs():
    """vllm_decode_full (FULL graph mode): the one hipGraphLaunch is called before the
    doctor's window opens (the head it leaves out), its replay runs inside: 97 % of the
    pass's GPU time is in graph replays, and no advice says to capture CUDA graphs."""
    d = hta_fast.doctor.diagnose(hta_fast.load_dir(str(_path("modern/vllm_decode_full"))))
    lb = d.finding("launch_bound")
    assert lb.evidence["gpu_time_share_in_graphs"] == pytest.approx(0.969, abs=0.005)
    assert "already runs in graph replays" in lb.title
    assert "already runs in graph replays" in d.finding("parallelism").advice
