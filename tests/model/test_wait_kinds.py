"""Each kind of wait, built with its answers known (tests/support/wait_kinds.py): the owners, the
critical path, the doctor and the what-if tell one story of the same steps: who owns the
time the GPU did not compute, the first cause, and what removing the wait saves."""

from __future__ import annotations

import numpy as np
import pytest

from hta_fast.doctor import diagnose
from hta_fast.model.path.bounds import BOUND_BY
from hta_fast.model.path.critical_path import critical_path
from hta_fast.model.path.owners import OWNERS, wait_owners
from hta_fast.model.whatif.steps import what_if
from tests.support.kineto_builder import traceset
from tests.support.wait_kinds import KINDS, LATE, Kind


def _top_waiting(per: dict[str, float]) -> str:
    return max((o for o in per if o != "gpu_compute_bound"), key=lambda o: per[o])


@pytest.fixture(scope="module", params=sorted(KINDS))
def kind(request) -> tuple[str, Kind, object]:
    k = KINDS[request.param]
    return request.param, k, traceset(k.builders())


def test_the_owners_and_the_path_name_one_top_owner(kind):
    name, k, ts = kind
    owners = wait_owners(ts).to_pandas()
    assert (owners[OWNERS] >= 0).all().all()
    assert _top_waiting(owners[OWNERS].sum().to_dict()) == k.top_owner, name
    if k.top_owner == "cross_rank":
        # the step's path across ranks starts on the rank the others waited for
        across = critical_path(ts, cross_rank=True).to_pandas()
        assert (across.start_rank == LATE).all()
        return
    path = critical_path(ts).to_pandas()
    shares = path[BOUND_BY].fillna(0)
    assert ((shares >= 0) & (shares <= 100 + 1e-9)).all().all()
    on_path = (shares.mul(path.critical_path_length, axis=0)).sum().to_dict()
    assert _top_waiting(on_path) == k.top_owner, name
    assert on_path["untraced_host"] < 0.01 * path.critical_path_length.sum()


def test_the_doctor_names_the_cause(kind):
    name, k, ts = kind
    d = diagnose(ts)
    above = [f.cause for f in d.findings if f.above_threshold]
    if k.cause is None:
        assert above == [], (name, above)
    else:
        assert above[:1] == [k.cause], (name, above)


def test_the_what_if_saves_what_the_wait_costs(kind):
    name, k, ts = kind
    if k.saved_ns is None:
        f = diagnose(ts).finding("unrecorded_gpu_work")
        assert f.saving_ns_per_step is None and "not removable" in f.saving_edit
        owned = wait_owners(ts).to_pandas().gpu_unrecorded_work.mean()
        for edits in ({"zero_launch_overhead": True}, {"drop_sync_waits": True}):
            t = what_if(ts, **edits)["totals"].to_pylist()[0]
            assert t["predicted"] / t["steps"] >= owned, (name, edits)  # the hold stays
        return
    if k.edits:
        totals = what_if(ts, **k.edits)["totals"].to_pandas()
        saved = float(np.mean((totals.replayed - totals.predicted) / totals.steps))
    else:
        saved = diagnose(ts).finding(k.cause).saving_ns_per_step
    assert saved == pytest.approx(k.saved_ns, rel=0.1), name
