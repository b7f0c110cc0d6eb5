"""What-if edits replayed on the dependency graph: what_if (hta_fast.model.whatif.steps) and the
Edits it takes (hta_fast.model.whatif.edits). The names resolve on first use (hta_fast._lazy):
a module that needs the Edits does not import the replay."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_package

if TYPE_CHECKING:
    from .edits import Edits
    from .steps import what_if

# Each public name and the module that defines it (tests/project/test_startup.py holds it, the
# TYPE_CHECKING imports and __all__ equal).
PUBLIC = {"Edits": "hta_fast.model.whatif.edits", "what_if": "hta_fast.model.whatif.steps"}

__all__ = ["Edits", "what_if"]

lazy_package(__name__, PUBLIC)
