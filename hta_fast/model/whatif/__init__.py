"""What-if edits replayed on the dependency graph: what_if (hta_fast.model.whatif.steps) and the
Edits it takes (hta_fast.model.whatif.edits)."""

from .edits import Edits
from .steps import what_if

__all__ = ["Edits", "what_if"]
