"""Analyses of inference traces, one module each; like analysis/tensorboard, this package
imports nothing from analysis/ itself (the registry there imports it).

    phases   the passes of a serving stack or pipeline (prefill, decode, denoising steps,
             model forwards) or, without annotations, the iterations of its repeated
             launches: per pass its window, GPU busy time and share, kernels and launches;
             per phase count, mean and median duration, busy share

    from hta_fast.analysis.inference import phases
    phases.phases(trace).to_pandas()

docs/inference.md says which names mark which phase and where each was checked.
"""

from . import phases

__all__ = ["phases"]
