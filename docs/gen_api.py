"""Writes docs/api.md, the API reference, from the package's docstrings and signatures.

    python docs/gen_api.py           # rewrite docs/api.md
    python docs/gen_api.py --check   # exit 1 when docs/api.md is not what this writes

The API is what the public packages name in their __all__, and nothing else: a name not in
an __all__ is internal, whatever module it lives in. Names in an __all__ that hold a tuple of
strings (a fixed set of choices) are listed with it.
"""

from __future__ import annotations

import argparse
import enum
import importlib
import inspect
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

OUT = Path(__file__).parent / "api.md"

# The public packages, bottom of the stack first after the entry points.
PUBLIC = [
    "hta_fast",
    "hta_fast.frame",
    "hta_fast.steps",
    "hta_fast.analysis",
    "hta_fast.recipes",
    "hta_fast.udf",
    "hta_fast.costs",
    "hta_fast.model",
    "hta_fast.doctor",
    "hta_fast.compat",
    "hta_fast.interop",
    "hta_fast.sql",
    "hta_fast.ops",
    "hta_fast.loading",
]


def module_names() -> list[str]:
    return list(PUBLIC)


def public(mod: ModuleType) -> list[tuple[str, Any]]:
    names = getattr(mod, "__all__", None)
    if names is None:
        raise SystemExit(f"{mod.__name__} has no __all__: say what its public names are")
    items = [(n, getattr(mod, n)) for n in names]
    return [
        (n, v)
        for n, v in items
        if inspect.isfunction(v)
        or inspect.isclass(v)
        or _is_metric(v)
        or _is_choices(v)
        or inspect.isbuiltin(v)
        or inspect.ismodule(v)
        or isinstance(v, dict)
    ]


def _is_metric(value: Any) -> bool:
    return type(value).__name__ == "Metric"


def _is_choices(value: Any) -> bool:
    return isinstance(value, tuple) and bool(value) and all(isinstance(v, str) for v in value)


def _line(value: Any) -> int:
    target = value.function if _is_metric(value) else value
    try:
        return inspect.getsourcelines(target)[1]
    except (OSError, TypeError):
        return 0


def signature(fn: Any, drop_self: bool = False) -> str:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return "(...)"
    parts = []
    star_done = False
    for i, p in enumerate(sig.parameters.values()):
        if drop_self and i == 0 and p.name in ("self", "cls"):
            continue
        if p.kind == p.KEYWORD_ONLY and not star_done:
            parts.append("*")
            star_done = True
        if p.kind == p.VAR_POSITIONAL:
            star_done = True
        prefix = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "")
        text = prefix + p.name
        if p.annotation is not p.empty:
            text += f": {_annotation(p.annotation)}"
        if p.default is not p.empty:
            text += f" = {_default(p.default)}"
        parts.append(text)
    out = f"({', '.join(parts)})"
    if sig.return_annotation is not sig.empty:
        out += f" -> {_annotation(sig.return_annotation)}"
    return out


def _annotation(a: Any) -> str:
    return a if isinstance(a, str) else inspect.formatannotation(a)


def _default(d: Any) -> str:
    if isinstance(d, (int, float, str, bool, type(None), tuple)):
        return repr(d)
    if hasattr(d, "name") and hasattr(type(d), "__members__"):  # an enum member
        return f"{type(d).__name__}.{d.name}"
    return type(d).__name__ + "(...)"


def doc_block(obj: Any) -> list[str]:
    doc = inspect.getdoc(obj)
    return ["```text", doc, "```", ""] if doc else []


def render_class(name: str, cls: type, heading: str = "###") -> list[str]:
    if issubclass(cls, enum.Enum):
        members = ", ".join(f"{m.name} = {m.value!r}" for m in cls)
        own = cls.__dict__.get("__doc__")  # not the docstring Enum itself carries
        return [f"{heading} enum `{name}`", "", f"Members: {members}.", ""] + (
            ["```text", inspect.cleandoc(own), "```", ""] if own else []
        )
    lines = [f"{heading} class `{name}{signature(cls.__init__, drop_self=True)}`", ""]
    lines += doc_block(cls)
    for attr, value in vars(cls).items():
        if attr.startswith("_"):
            continue
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if inspect.isfunction(value):
            lines += [f"{heading}# `{name}.{attr}{signature(value, drop_self=True)}`", ""]
            lines += doc_block(value)
        elif isinstance(value, property) or type(value).__name__ == "cached_property":
            lines += [f"{heading}# `{name}.{attr}` (property)", ""]
            lines += doc_block(value)
    return lines


def render_module(mod: ModuleType, heading: str = "##") -> list[str]:
    """A module's docstring and its public names; a module named in an __all__ (a package's
    question modules) is rendered below it with its own __all__."""
    lines = [f"{heading} `{mod.__name__}`", ""]
    lines += doc_block(mod)
    submodules = []
    for name, value in public(mod):
        if inspect.ismodule(value):
            submodules.append(value)
            continue
        lines += render_name(name, value, heading + "#")
    for sub in submodules:
        lines += render_module(sub, heading + "#")
    return lines


def render_name(name: str, value: Any, heading: str = "###") -> list[str]:
    if isinstance(value, dict):  # a registry or a field's metadata: its keys
        return [f"{heading} `{name}`", "", "```text", ", ".join(map(str, value)), "```", ""]
    if inspect.isclass(value):
        return render_class(name, value, heading)
    if _is_choices(value):
        return [f"{heading} `{name}`", "", "```text", ", ".join(value), "```", ""]
    if _is_metric(value):
        return [f"{heading} metric `{name}{signature(value.function)}`", ""] + doc_block(
            value.function
        )
    return [f"{heading} `{name}{signature(value)}`", ""] + doc_block(value)


def render() -> str:
    lines = [
        "# API reference",
        "",
        "Generated from the docstrings by `python docs/gen_api.py`; do not edit by hand.",
        "The API is what the packages below name in `__all__`; anything else is internal.",
        "Times are int64 nanoseconds unless a name says otherwise.",
        "",
    ]
    for mod_name in module_names():
        lines += render_module(importlib.import_module(mod_name))
    return "\n".join(lines).rstrip() + "\n"


def write_or_check(out: Path, text: str, script: str, description: str) -> int:
    """Writes `text` to `out`, or with --check exits 1 when `out` is not that text: the
    main of each docs/gen_*.py."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args()
    if args.check:
        if not out.exists() or out.read_text() != text:
            print(f"{out} is out of date: run python docs/{script}", file=sys.stderr)
            return 1
        return 0
    out.write_text(text)
    return 0


def main() -> int:
    return write_or_check(OUT, render(), "gen_api.py", __doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(main())
