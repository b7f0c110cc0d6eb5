"""analysis.temporal.busy_bins: each rank's GPU busy share per time bin, known by
construction (kernels placed to fill exact halves and quarters of the span)."""

import numpy as np

from hta_fast.analysis.temporal import busy_bins
from hta_fast.frame import select
from tests.support.kineto_builder import KinetoBuilder, traceset

GEMM = "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn"


def test_busy_share_per_bin():
    a = KinetoBuilder(rank=0, world_size=2)
    a.step(0, 0, 1000)
    a.kernel(GEMM, 1, 0, 400)  # busy 0-400 of a 0-800 span
    a.kernel(GEMM, 2, 700, 100)  # and 700-800
    b = KinetoBuilder(rank=1, world_size=2)
    b.step(0, 0, 1000)
    b.kernel(GEMM, 1, 0, 800)  # busy throughout
    bins = busy_bins(traceset([a, b]), select.selection_of(None, None, None), 4)
    assert bins.ranks.tolist() == [0, 1]
    np.testing.assert_allclose(bins.busy, [[1.0, 1.0, 0.0, 0.5], [1.0, 1.0, 1.0, 1.0]])
    assert len(bins.edges) == 5 and bins.edges[0] == 0.0 and bins.start_ns > 0
