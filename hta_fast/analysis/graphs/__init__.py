"""Analyses of CUDA/HIP graphs, one module each; each returns a Result per rank.

    graph_replays  each graph launch's replay: its GPU work and share of the GPU time, and
                   the capture it was matched to with the operators that captured it

    from hta_fast.analysis.graphs import graph_replays
    graph_replays.graph_replays(traces).to_pandas()

What they read (the replays, the captures, the match) is in hta_fast.frame, where the
operator analyses read it too.
"""

from . import graph_replays

__all__ = ["graph_replays"]
