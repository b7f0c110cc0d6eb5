"""Synthetic traces: `generator` writes large Kineto traces from a real one (the benchmarks'
and the demo's), and the doctor's scenarios with answers known by construction; `variation`
says how ranks and repetitions differ (stragglers, slow links, jitter). The generator's names
are the package's: `hta_fast.synth.generate`, `hta_fast.synth.main`, ..."""

from .generator import *  # noqa: F403 (the generator's public names, as before the split)
