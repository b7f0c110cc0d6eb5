"""Collectives matched across ranks by their Comms Id (kineto's output_json.cpp writes the
record_param_comms metadata "Comms Id", a uint64 hash of the process group, sequence number,
p2p flag and ranks, on the NCCL kernel's args), else by (process group, sequence number),
else by their order in the group: a 4-rank set whose rank 3 ran two all-reduces in the other
order is matched exactly, and the id survives a slice."""

from __future__ import annotations

import pytest

import hta_fast
from hta_fast.analysis.collectives import collectives
from hta_fast.loading.slice_writer import write_slice
from tests.support.kineto_builder import KinetoBuilder, traceset

RANKS = 4
# Three all-reduces of different sizes; ids above 2**63 (a uint64 hash) on purpose.
SIZES = (1_000_000, 8_000_000, 64_000_000)
IDS = (18_446_744_073_709_551_557, 9_223_372_036_854_775_809, 12_345)
SWAPPED = 3  # this rank ran the first two in the other order


def _job(with_id: bool, with_seq: bool) -> hta_fast.TraceSet:
    builders = []
    for rank in range(RANKS):
        b = KinetoBuilder(rank=rank, world_size=RANKS)
        b.step(0, 0, 10_000)
        order = [1, 0, 2] if rank == SWAPPED else [0, 1, 2]
        for slot, k in enumerate(order):
            args = {}
            if with_seq:
                args["Seq"] = k
            if with_id:
                args["Comms Id"] = IDS[k]
            t = 100 + 2_000 * slot
            b.nccl("allreduce", t, t + 50 + 10 * rank, 500, nelems=SIZES[k], args=args)
        builders.append(b)
    return traceset(builders)


def _first_matches(result) -> tuple[list[int], list[int]]:
    """The match of the swapped rank's first kernel, and of rank 0's first and second."""
    per = result["per_rank"].to_pydict()
    rows = list(zip(per["rank"], per["match"], per["index"]))
    swapped = [m for r, m, i in rows if r == SWAPPED and i == 0]
    ours = [m for r, m, i in rows if r == 0 and i in (0, 1)]
    return swapped, ours


@pytest.mark.parametrize(
    "with_id, with_seq, how",
    [(True, True, "comms_id"), (True, False, "comms_id"), (False, True, "seq")],
)
def test_matched_exactly_whatever_the_order(with_id, with_seq, how):
    ts = _job(with_id, with_seq)
    result = collectives(ts)
    table = result.table
    assert table.num_rows == len(SIZES)
    assert set(table["matched_by"].to_pylist()) == {how}
    assert sorted(table["bytes"].to_pylist()) == [4 * n for n in SIZES]  # float32, one each
    assert table["ranks"].to_pylist() == [RANKS] * len(SIZES)
    swapped, ours = _first_matches(result)
    assert swapped == [ours[1]]  # its first kernel is the others' second collective
    counted = {"comms_id": "3 by Comms Id", "seq": "3 by (process group, sequence number)"}
    assert any(counted[how] in n for n in result.notes)


def test_by_order_the_swapped_rank_is_paired_wrongly():
    """Without an id or a sequence number the order is all there is: the swapped rank's
    kernels pair with the other collectives (this is what the ids fix)."""
    result = collectives(_job(False, False))
    assert set(result.table["matched_by"].to_pylist()) == {"order"}
    swapped, ours = _first_matches(result)
    assert swapped == [ours[0]]  # paired by order, though it is another collective
    assert not any("by Comms Id" in n for n in result.notes)


def test_the_id_is_kept_exactly_and_survives_a_slice(tmp_path):
    ts = _job(True, True)
    t = ts[SWAPPED]
    ids = t.column_array("comm_args", "comms_id").to_pylist()
    assert sorted(ids) == sorted(str(i) for i in IDS)
    out = tmp_path / "slice.json"
    write_slice(
        t, out, (int(t.column("events", "ts").min()), int(t.column("events", "ts").max()) + 1)
    )
    again = hta_fast.load(str(out))
    assert sorted(again.column_array("comm_args", "comms_id").to_pylist()) == sorted(ids)


def test_two_kernels_of_one_collective_are_two_matches():
    """A collective that launched two kernels has its id on both: the n-th kernel of an id
    on one rank is the n-th on the others, never one match counting a rank twice."""
    builders = []
    for rank in range(RANKS):
        b = KinetoBuilder(rank=rank, world_size=RANKS)
        b.step(0, 0, 10_000)
        for slot in range(2):
            t = 100 + 2_000 * slot
            b.nccl("allreduce", t, t + 50, 500, args={"Comms Id": IDS[0], "Seq": 7})
        builders.append(b)
    table = collectives(traceset(builders)).table
    assert table["ranks"].to_pylist() == [RANKS, RANKS]
    assert set(table["matched_by"].to_pylist()) == {"comms_id"}
