"""The host's side of the one attribution (model.path.host_owners): each launching thread's
step partitioned by the innermost event it was in, a blocking call or a polling run owned by
what owned the GPU meanwhile; on real traces and by construction."""

from __future__ import annotations

import numpy as np
import pytest

import hta_fast
from hta_fast.model.path.host_owners import host_owners
from hta_fast.model.path.owners import OWNERS
from tests.model.test_wait_owners import REAL, SHARED, _ddp
from tests.support.synthetic_traces import POLL_KERNEL_US, POLL_KERNELS, polling_host_builder


def _partitions(table) -> None:
    t = table.to_pandas()
    assert len(t)
    assert (t[OWNERS] >= 0).all().all()
    np.testing.assert_array_equal(t[OWNERS].sum(axis=1).to_numpy(), t["step_ns"].to_numpy())


@pytest.mark.parametrize("rel", REAL)
def test_each_launching_thread_is_partitioned_on_real_traces(rel):
    path = SHARED / rel
    if not path.is_dir():
        pytest.skip(f"{path} not present")
    _partitions(host_owners(hta_fast.load_dir(str(path))).table)


def test_a_host_in_a_sync_waits_for_what_the_gpu_ran():
    """DDP-like steps: the host sits 19 ms of each 20 ms step in a stream sync while the GPU
    computes 8 ms, then all-reduces 11 ms."""
    t = host_owners(_ddp().load()).to_pandas()
    _partitions(host_owners(_ddp().load()).table)
    assert len(t) == 3  # one launching thread, three steps
    assert (t.gpu_compute_bound >= 7_500_000).all()
    assert (t.gpu_communication_bound == 11_000_000).all()
    assert (t.untraced_host == 0).all()


def test_a_polling_host_waits_for_the_gpu():
    t = host_owners(polling_host_builder().load()).to_pandas()
    work = POLL_KERNELS * POLL_KERNEL_US * 1000
    assert (t.gpu_compute_bound >= 0.99 * work).all()
    assert (t.untraced_host == 0).all()


def test_the_owners_command_by_thread(tmp_path):
    """`owners --by-thread` adds the host's table; its sync wait reads as the GPU's owners."""
    import json

    from click.testing import CliRunner

    from hta_fast.cli.app import cli

    path = tmp_path / "ddp.json"
    path.write_bytes(_ddp().to_bytes())
    res = CliRunner().invoke(cli, ["-q", "owners", str(path), "--by-thread", "--format", "json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    rows = doc["tables"]["host_owners"]
    assert len(rows) == 3
    assert all(r["gpu_communication_bound"] == 11_000_000 for r in rows)
