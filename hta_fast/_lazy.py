"""Public names resolved on first use (PEP 562 and PEP 549's module class): a package's
`__init__` maps each name to the module that defines it, and that module is imported when
the name is first read, so importing the package costs only what is used. `from package
import name` goes through the same path."""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any, Mapping


def lazy_package(package: str, public: Mapping[str, str], *, subpackages: bool = False) -> None:
    """Make the package `package` resolve each name of `public` (name -> defining module) on
    first use. With `subpackages`, any other public-looking name is tried as a submodule
    (`hta_fast.frame`) before the AttributeError.

    A public name that is also a submodule's (`hta_fast.steps.steps_from`, the function, in
    the module of that name) stays the function when the submodule is imported: the import
    system would otherwise bind the module over it."""

    class LazyPackage(types.ModuleType):
        def __getattr__(self, name: str) -> Any:
            module = public.get(name)
            if module is not None:
                value = getattr(importlib.import_module(module), name)
                super().__setattr__(name, value)  # once: later lookups do not come here
                return value
            if subpackages and not name.startswith("_"):
                try:
                    return importlib.import_module(f"{package}.{name}")
                except ModuleNotFoundError as e:
                    if e.name != f"{package}.{name}":
                        raise
            raise AttributeError(f"module {package!r} has no attribute {name!r}")

        def __setattr__(self, name: str, value: Any) -> None:
            submodule = (
                isinstance(value, types.ModuleType) and value.__name__ == f"{package}.{name}"
            )
            if not (submodule and name in public):
                super().__setattr__(name, value)

        def __dir__(self) -> list[str]:
            return sorted([*vars(self), *public])

    sys.modules[package].__class__ = LazyPackage
