#!/usr/bin/env python3
"""Generate large PyTorch profiler (Kineto) traces from a real one: the command line of
hta_fast.synth (where the generator lives, so that `hta-fast demo` has it installed).

    python benchmarks/gen_trace.py --size-mb 1000 --ranks 1 --out DIR \\
        [--gzip] [--layout native|indent|oneline] [--seed N] [--base TRACEFILE] [--verify] \\
        [--straggler RANK:FACTOR]... [--slow-link RANK:FACTOR]... [--jitter PCT] [-q]
"""

from __future__ import annotations

import sys

from hta_fast.synth import *  # noqa: F401,F403  (generate, make_plan, ... for the benchmarks)
from hta_fast.synth import main

if __name__ == "__main__":
    sys.exit(main())
