"""One size per collective: the rank summaries (and so `analyze -a collectives`), comm_bytes
and the doctor's bus bandwidths all take it from hta_fast.costs.collectives, and agree."""

from __future__ import annotations

import math

import numpy as np

import hta_fast
from hta_fast.analysis.collectives import collectives
from hta_fast.analysis.launch_stats import launch_pairs
from hta_fast.analysis.ops.op_table import ancestor_pairs
from hta_fast.costs import dtypes
from hta_fast.costs.collectives import dtype_of_kernel, message_bytes
from hta_fast.doctor.causes.exposed_communication import bus_bandwidths
from hta_fast.loading.summary import collective_rows, rank_summary
from hta_fast.model.comm.comm_bytes import comm_bytes
from tests.support.kineto_builder import BASE_US, CPU_PID, CPU_TID, KinetoBuilder


def _kernel_bytes(trace) -> dict[int, float]:
    """Event row of each communication kernel -> the summary's bytes (NaN: unknown)."""
    b = rank_summary(trace).collectives["bytes"].to_numpy(zero_copy_only=False)
    return dict(zip(collective_rows(trace).tolist(), b.astype(np.float64).tolist()))


def _sized_by_arguments(trace) -> set[int]:
    """The communication kernels whose size the collective arguments give (comm_bytes lists
    the calls with arguments; sizes read from Input Dims are the summary's only)."""
    t = rank_summary(trace).collectives
    return {
        k
        for k, s in zip(collective_rows(trace).tolist(), t["size_from"].to_pylist())
        if s == "arguments"
    }


def _args_row_of_kernels(trace) -> dict[int, list[int]]:
    """comm_args event row -> the kernels it stands for: itself, or those it launched."""
    rows = trace.column("comm_args", "row")
    kind = trace.column("events", "kind")
    out = {int(r): [int(r)] for r in rows if kind[r] == hta_fast.EventKind.kernel}
    is_cpu = np.zeros(len(kind), bool)
    is_cpu[[r for r in rows if int(r) not in out]] = True
    launch, gpu = launch_pairs(trace, None, include_memory_events=False)
    i, anc = ancestor_pairs(trace, launch, is_cpu)
    for k, a in zip(gpu[i].tolist(), anc.tolist()):
        out.setdefault(a, []).append(k)
    return out


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def assert_consumers_agree(trace) -> int:
    """Checks the three consumers against the summary; returns how many kernels have bytes."""
    per_kernel = _kernel_bytes(trace)
    # comm_bytes: one row per collective call, on its kernel or its record_param_comms
    kernels_of = _args_row_of_kernels(trace)
    compared = set()
    for row, nbytes in zip(*(comm_bytes(trace).table[c].to_pylist() for c in ("row", "bytes"))):
        # (a `wait` or `barrier` record launches no communication kernel: nothing to compare)
        for k in (k for k in kernels_of.get(row, []) if k in per_kernel):
            assert _same(per_kernel[k], math.nan if nbytes is None else nbytes), (row, k)
            compared.add(k)
    # every kernel that has arguments of its own or its launcher's was compared
    assert compared == _sized_by_arguments(trace)
    # analyze -a collectives: per matched collective (one rank: one kernel each)
    summary = rank_summary(trace).collectives
    by_key = {
        (g, i): b for g, i, b in zip(*(summary[c].to_pylist() for c in ("group", "index", "bytes")))
    }
    main = collectives(trace).table
    for g, i, b in zip(*(main[c].to_pylist() for c in ("group", "index", "bytes"))):
        assert by_key[(g, i)] == b
    # the doctor: every sized kernel with a duration, in the order given
    kernels = np.array(sorted(per_kernel), np.int64)
    dur = trace.column("events", "dur")[kernels]
    got, _ = bus_bandwidths(trace, kernels, dur)
    want = [
        per_kernel[k] for k, d in zip(kernels.tolist(), dur.tolist()) if per_kernel[k] > 0 and d > 0
    ]
    assert got.tolist() == want
    return len(want)


def test_consumers_agree_on_a_real_trace_with_args(traces_dir):
    # the arguments sit on both record_param_comms and the kernel; `wait`s launch no kernel
    trace = hta_fast.load(traces_dir / "hta/nccl_parser_config/nccl_data.json.gz")
    assert assert_consumers_agree(trace) == 21


def test_consumers_agree_when_only_the_cpu_op_has_args(traces_dir):
    # ns_resolution_trace: record_param_comms with arguments, no communication kernel
    trace = hta_fast.load_dir(traces_dir / "hta/ns_resolution_trace")[0]
    assert comm_bytes(trace).table.num_rows == 45 and assert_consumers_agree(trace) == 0
    # and with kernels: the kernel takes its launcher's arguments, in all three
    b = KinetoBuilder(rank=0, world_size=2)
    for i, (name, n_in, n_out) in enumerate(
        [("_allgather_base", 1_000_000, 2_000_000), ("_reduce_scatter_base", 2_000_000, 1_000_000)]
    ):
        t0 = 1000.0 * i
        b.events.append(
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": "record_param_comms",
                "pid": CPU_PID,
                "tid": CPU_TID,
                "ts": BASE_US + t0,
                "dur": 50,
                "args": {
                    "Collective name": name,
                    "In msg nelems": n_in,
                    "Out msg nelems": n_out,
                    "dtype": "BFloat16",
                    "Group size": 2,
                    "Process Group Name": "0",
                },
            }
        )
        b.kernel(
            f"ncclDevKernel_{name.strip('_')}(ncclDevKernelArgsStorage<4096ul>)",
            t0 + 10,
            t0 + 100,
            500.0,
            stream=20,
        )
    trace = b.load()
    assert assert_consumers_agree(trace) == 2
    assert comm_bytes(trace).table["bytes"].to_pylist() == [4e6, 4e6]


def test_consumers_agree_without_args_size_from_input_dims(traces_dir):
    traces = hta_fast.load_dir(traces_dir / "param_dlrm_8rank")
    for trace in traces.values():
        # no arguments: every size is the nccl:* op's Input Dims, and its dtype theirs
        assert trace.comm_args.num_rows == 0 and assert_consumers_agree(trace) == 8
        t = rank_summary(trace).collectives
        assert t["bytes"].null_count == 0 and set(t["size_from"].to_pylist()) == {"input_dims"}
        assert set(t["dtype"].to_pylist()) <= {"float", "int", "long int"}
    assert collectives(traces).table["bytes"].null_count == 0


def test_without_args_or_shapes_the_dtype_is_the_kernel_names(traces_dir):
    trace = hta_fast.load(traces_dir / "hta/df_index_resolver/df_index_resolver.json.gz")
    t = rank_summary(trace).collectives
    assert t["bytes"].null_count == t.num_rows > 0 and assert_consumers_agree(trace) == 0
    assert t["dtype"].to_pylist() == [dtype_of_kernel(n) for n in t["name"].to_pylist()]


def test_args_without_dtype_take_the_kernel_names():
    b = KinetoBuilder(rank=0, world_size=2)
    b.nccl("allreduce", 0, 100, 1000.0, nelems=1_000_000, dtype="")  # kernel: ..._f32_...
    trace = b.load()
    assert assert_consumers_agree(trace) == 1
    assert comm_bytes(trace).table["bytes"].to_pylist() == [4e6]
    assert rank_summary(trace).collectives["dtype"].to_pylist() == ["f32"]


def test_one_dtype_table_for_every_spelling():
    for spelling in ("float", "Float", "float32", "f32", "ncclFloat32", "torch.float32"):
        assert dtypes.itemsize(spelling) == 4 and dtypes.precision(spelling) == "fp32"
    for spelling in ("c10::Half", "half", "Half", "ncclFloat16", "f16"):
        assert dtypes.itemsize(spelling) == 2 and dtypes.precision(spelling) == "fp16"
    for spelling in ("c10::BFloat16", "BFloat16", "__nv_bfloat16", "ncclBfloat16", "bf16"):
        assert dtypes.itemsize(spelling) == 2 and dtypes.precision(spelling) == "bf16"
    assert {dtypes.itemsize(s) for s in ("long int", "Long", "ncclInt64", "int64_t")} == {8}
    assert {dtypes.itemsize(s) for s in ("int8_t", "Char", "signed char", "i8")} == {1}
    assert dtypes.itemsize("c10::complex<c10::Half>") == 4 and dtypes.precision("int") is None
    assert dtypes.itemsize("Mystery") is None and dtypes.itemsize(None) is None
    assert dtypes.scalar_type_itemsize(15) == 2 and dtypes.scalar_type_itemsize(99) is None


def test_message_bytes_is_nccl_tests_size():
    # all-gather: the gathered output; reduce-scatter: the input; unknown dtype or counts: NaN
    got = message_bytes(
        np.array([10, 80, 5, -1]), np.array([80, 10, 5, -1]), ["Float", "bf16", "Mystery", "Float"]
    )
    assert got[:2].tolist() == [320.0, 160.0] and np.isnan(got[2:]).all()
