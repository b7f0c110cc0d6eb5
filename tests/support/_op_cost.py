"""The cost model of one operator call, as a test writes it: shapes and types as lists."""

from __future__ import annotations

import json

from hta_fast.costs.cost import Cost
from hta_fast.costs.flops import cost_of


def cost(name, dims, types=None, concrete=None) -> Cost:
    """The Cost of `name` called with Input Dims `dims` (Input type `types`, float for every
    input when not given, and Concrete Inputs `concrete`); fails the test when no model
    gives one."""
    types = types if types is not None else ["float"] * len(dims)
    c = cost_of(
        name,
        json.dumps(dims),
        json.dumps(types),
        None if concrete is None else json.dumps(concrete),
    )
    assert isinstance(c, Cost), c
    return c
