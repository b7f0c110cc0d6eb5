"""Every what-if edit, declared once (hta_fast.model.whatif.declared.declaration), in the order the
replay applies them: the duration changes (the interconnect, the job at another scale, the
changes computed elsewhere, another GPU, the ops, another trace's durations, then the
declared edits without an Edits field), then the weights' factors and dropped waits, and the
ranks they apply to. `hta-fast whatif` takes its edit options from here, what_if its
keywords, Edits the values of the declared edits, and docs/gen_whatif.py the docs' table.

An edit is a module that holds its EditDeclaration and one line below: (the module, under
hta_fast.model.whatif, and the declaration's name in it).
"""

from __future__ import annotations

from importlib import import_module

from .declaration import EditDeclaration

DECLARED = (
    ("bandwidth_edit", "EDIT"),
    ("world_size_edit", "EDIT"),
    ("replay_edits", "PLANNED"),
    ("device_edit", "EDIT"),
    ("op_edit", "EDIT"),
    ("durations_from", "EDIT"),
    ("replay_edits", "KERNEL_CLASS"),
    ("replay_edits", "NAME"),
    ("replay_edits", "CATEGORY"),
    ("replay_edits", "CPU"),
    ("replay_edits", "ZERO_LAUNCH_OVERHEAD"),
    ("replay_edits", "DROP_COMM_WAITS"),
    ("replay_edits", "DROP_SYNC_WAITS"),
    ("replay_edits", "EDIT_RANKS"),
)


def _declaration(module: str, name: str) -> EditDeclaration:
    edit = getattr(import_module(f"{__package__}.{module}"), name)
    if not isinstance(edit, EditDeclaration):
        raise TypeError(f"{module}.{name} is not an EditDeclaration")
    return edit


EDITS: tuple[EditDeclaration, ...] = tuple(_declaration(m, n) for m, n in DECLARED)
# Each edit's module (hta_fast.model.whatif.<module>), by key.
MODULE = {e.key: f"{__package__}.{m}" for e, (m, _) in zip(EDITS, DECLARED)}
# Each keyword of what_if and the edit that owns it.
BY_KEYWORD = {k: e for e in EDITS for k in e.keywords}


def _check() -> None:
    """Keys, keywords and option names are each declared once."""
    for what, names in (
        ("key", [e.key for e in EDITS]),
        ("keyword", [k for e in EDITS for k in e.keywords]),
        ("option", [o.flag for e in EDITS for o in e.options]),
        ("option dest", [o.dest for e in EDITS for o in e.options]),
    ):
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"what-if edits: the {what}(s) {twice} are declared twice")


_check()
