"""The demo's own job (`hta-fast demo`: 4 ranks from the sample program, the middle rank's GPU
compute STRAGGLER_FACTOR times as long, the hosts at the program's pace, the others waiting
for it in their collectives): the doctor's first cause and the report's headline name the
straggler, with the wait the others spend on it, and the owners and the path across ranks
agree."""

from __future__ import annotations

import pytest

import hta_fast
from hta_fast import synth
from hta_fast.cli.commands.demo import STRAGGLER_FACTOR
from hta_fast.doctor import diagnose
from hta_fast.model.path.critical_path import critical_path
from hta_fast.model.path.owners import wait_owners

pytestmark = [
    pytest.mark.skipif(not synth.DEFAULT_BASE.exists(), reason="the sample trace is not here"),
    pytest.mark.slow,  # generates 4 ranks and diagnoses them
]

STRAGGLER = 2


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo")
    synth.generate(out, 5, 4, compress=True, stragglers={STRAGGLER: STRAGGLER_FACTOR})
    return hta_fast.load_dir(str(out))


def test_the_doctor_names_the_straggler_first(demo):
    d = diagnose(demo)
    top = d.findings[0]
    assert top.cause == "rank_imbalance" and top.above_threshold
    assert top.evidence["waited_for_rank"] == STRAGGLER
    assert top.evidence["slowest_rank"] == STRAGGLER
    # its host read the loss at the step's end, waiting for its own GPU
    assert str(top.evidence["its_host_meanwhile"]).startswith("waiting for its own GPU in ")
    others_wait = top.evidence["others_wait_for_it_ns_per_step"]
    assert others_wait > 0.1 * d.headline()["step_time_ns"]
    assert top.saving_ns_per_step and top.saving_ns_per_step > 0
    assert any("top cause: rank_imbalance" in line for line in d.headline_text())


def test_the_owners_and_the_path_agree(demo):
    owners = wait_owners(demo).to_pandas()
    others = owners[owners["rank"] != STRAGGLER]
    assert (others.cross_rank > 0.1 * others.step_ns).all()
    assert (owners[owners["rank"] == STRAGGLER].cross_rank == 0).all()
    across = critical_path(demo, cross_rank=True).to_pandas()
    assert (across.start_rank == STRAGGLER).all()
