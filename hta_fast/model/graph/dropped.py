"""A weight that takes an edge out of a replay while keeping the graph: a node's time is the
latest over its incoming edges, and no path through an edge this negative can be the latest
(the replay starts nothing before the window's start). The what-if's dropped waits and the
gpu_only ablation's cut edges use it."""

DROPPED = -(1 << 50)
