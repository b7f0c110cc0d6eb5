"""Kernel classes from kernel names: the built-in prefixes, user rules tried first.

Answers are known by construction: each kernel's name says which rule it meets.
"""

import json

import pytest

import hta_fast
from hta_fast.schema import KernelClass

LONG = "void at::native::elementwise_kernel<" + "float, " * 900 + "nccl>(int)"

NAMES = {
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL": KernelClass.COMM,
    "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t": KernelClass.COMM,
    "rcclGenericKernel": KernelClass.COMM,
    "hcclAllGather": KernelClass.COMM,
    "Memcpy DtoD (Device -> Device)": KernelClass.MEM,
    "Memset (Device)": KernelClass.MEM,
    "dma_copy_engine": KernelClass.MEM,
    # A prefix only counts at the start, and case matters.
    "my_ncclKernel": KernelClass.COMP,
    "NCCLKernel": KernelClass.COMP,
    "memcpy_kernel": KernelClass.COMP,
    "ncc": KernelClass.COMP,
    "": KernelClass.COMP,
    LONG: KernelClass.COMP,
    "my_allreduce_fused": KernelClass.COMP,
    # Communication outside the collective libraries, as real traces spell it.
    "void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(c10::BFloat16*, "
    "unsigned long, unsigned int**, unsigned long, unsigned long)": KernelClass.COMM,
    "void c10d::symmetric_memory::one_shot_all_reduce_kernel<float, 8>(float*)": KernelClass.COMM,
    "void deep_ep::internode::dispatch<true, 8, 2, 256>(void*, int)": KernelClass.COMM,
    "void dpsk::ep::internode::combine<__nv_bfloat16, 8>(int*)": KernelClass.COMM,
    "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*)": KernelClass.COMM,
    "void sglang::cross_device_reduce_2stage<float, 4>(float*)": KernelClass.COMM,
    "void tensorrt_llm::kernels::oneShotAllReduceKernel<float, 8>(float*)": KernelClass.COMM,
    "void nvshmemi_transfer_rma_kernel<int>(int)": KernelClass.COMM,
    "mscclKernel_Sum_float_Simple_false": KernelClass.COMM,
    # A communication word in the template arguments or the parameters is not the kernel's.
    "void at::native::copy_kernel<multimem_buffer>(deep_ep::Buffer*)": KernelClass.COMP,
    "void (anonymous namespace)::vectorized_layer_norm_kernel<float>(int)": KernelClass.COMP,
}


def _load(names, **options):
    events = [
        {"ph": "X", "cat": "kernel", "name": n, "pid": 0, "tid": 7, "ts": 10 * i, "dur": 5}
        for i, n in enumerate(names)
    ]
    events.append({"ph": "X", "cat": "gpu_memcpy", "name": "copy", "pid": 0, "tid": 7,
                   "ts": 10 * len(names), "dur": 5})  # fmt: skip
    return hta_fast.load(json.dumps({"traceEvents": events}).encode(), **options)


def _classes(trace):
    names = trace.events.column("name").to_pylist()
    classes = trace.column("events", "kernel_class").tolist()
    return dict(zip(names, (KernelClass(c) for c in classes)))


def test_builtin_prefixes():
    got = _classes(_load(list(NAMES)))
    assert {n: got[n] for n in NAMES} == NAMES
    assert got["copy"] == KernelClass.MEM  # a memcpy event, whatever its name


@pytest.mark.parametrize("threads", [1, 2])
def test_user_rules_come_first(threads):
    rules = [("^my_allreduce", "COMM"), ("AllReduce", KernelClass.COMP), ("Memset", "comm")]
    got = _classes(_load(list(NAMES), kernel_classes=rules, threads=threads))
    want = dict(NAMES)
    want["my_allreduce_fused"] = KernelClass.COMM
    for name in NAMES:
        if "AllReduce" in name:  # searched, not anchored
            want[name] = KernelClass.COMP
    want["Memset (Device)"] = KernelClass.COMM
    assert {n: got[n] for n in NAMES} == want
