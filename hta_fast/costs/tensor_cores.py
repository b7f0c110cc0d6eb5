"""Tensor cores: which kernels use them, and which operators could.

A kernel uses tensor cores when its name carries the marks of the tensor-core code paths of
cuBLAS, cuDNN and CUTLASS: hmma, xmma, wgmma, tensorop, an MMA tile shape (s16816, h1688,
s884, i8816, ...), or one of the cuDNN kernels that NVIDIA's PyProf lists (conv1x1,
dgrad_1x1_stride_2x2, ...). A kernel is a GEMM when its name says so (gemm, matmul, cutlass;
not the fbgemm_gpu library). An operator is eligible for tensor cores when it is one of the
matrix-multiply, convolution and RNN-cell operators (or their backward nodes) that the
PyTorch profiler's TensorBoard plugin lists. Names are matched once per distinct name.
"""

from __future__ import annotations

import re
from typing import Iterable, Optional

import numpy as np

GEMM = r"(?i)(?<!fb)gemm|matmul|cutlass"  # fbgemm_gpu kernels are not GEMMs
TENSOR_CORE = (
    r"(?i)hmma|xmma|wgmma|tensorop|_tc_|16816|i8816|i16832|[shc]1688|[sh]884"
    r"|dgrad_1x1_stride_2x2|first_layer_wgrad_kernel|conv1x1|conv2d_c1_k1|direct_group"
)

ELIGIBLE_OPS = frozenset(
    [
        "aten::_convolution",
        "aten::_convolution_nogroup",
        "aten::conv1d",
        "aten::conv2d",
        "aten::conv3d",
        "aten::conv_tbc",
        "aten::conv_transpose1d",
        "aten::conv_transpose2d",
        "aten::conv_transpose3d",
        "aten::convolution",
        "aten::cudnn_convolution",
        "aten::cudnn_convolution_transpose",
        "aten::cudnn_convolution_backward",
        "aten::cudnn_convolution_backward_input",
        "aten::cudnn_convolution_backward_weight",
        "aten::cudnn_convolution_transpose_backward",
        "aten::cudnn_convolution_transpose_backward_input",
        "aten::cudnn_convolution_transpose_backward_weight",
        "aten::prelu",
        "aten::addmm",
        "aten::addmm_",
        "aten::addmv",
        "aten::addr",
        "aten::matmul",
        "aten::mm",
        "aten::mv",
        "aten::linear",
        "aten::addbmm",
        "aten::baddbmm",
        "aten::bmm",
        "aten::chain_matmul",
        "aten::linalg_multi_dot",
        "aten::_thnn_fused_lstm_cell",
        "aten::_thnn_fused_gru_cell",
        "aten::lstm_cell",
        "aten::gru_cell",
        "aten::rnn_tanh_cell",
        "aten::rnn_relu_cell",
        "CudnnConvolutionBackward",
        "CudnnConvolutionTransposeBackward",
        "BmmBackward0",
        "MmBackward",
        "AddmmBackward",
        "AddmvBackward",
        "MvBackward",
        "AddbmmBackward",
    ]
)

_TENSOR_CORE = re.compile(TENSOR_CORE)


def uses_tensor_cores(kernel_names: Iterable[Optional[str]]) -> np.ndarray:
    """Per kernel name: does it run on tensor cores (by its name)?"""
    return np.array(
        [n is not None and _TENSOR_CORE.search(n) is not None for n in kernel_names], bool
    )


def tensor_core_eligible(op_names: Iterable[Optional[str]]) -> np.ndarray:
    """Per operator name: is it one that could run on tensor cores?"""
    return np.array([n in ELIGIBLE_OPS for n in op_names], bool)
