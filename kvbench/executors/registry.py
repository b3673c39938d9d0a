"""Registry of executors by name — host, CUDA and NIXL alike — so the CLI can list them, suites can
name them (`kv.restore strategy=...`), and a benchmark finds the one it was asked for."""

from __future__ import annotations

import functools
import importlib
import pkgutil
from pathlib import Path
from typing import TYPE_CHECKING

from kvbench.errors import unknown_name

if TYPE_CHECKING:
    from kvbench.executors.base import Executor

_EXECUTORS: dict[str, Executor] = {}


def register(cls: type[Executor]) -> type[Executor]:
    """Class decorator: make an executor available under its `name`."""
    _EXECUTORS[cls.name] = cls()
    return cls


def get_executor(name: str) -> Executor:
    _load_builtin()
    if name not in _EXECUTORS:
        raise unknown_name("executor", name, _EXECUTORS)
    return _EXECUTORS[name]


def all_executors(family: str | None = None) -> dict[str, Executor]:
    """Every registered executor, or those of one `family` (host, cuda, nixl)."""
    _load_builtin()
    return {name: ex for name, ex in _EXECUTORS.items() if family is None or ex.family == family}


@functools.cache
def _load_builtin() -> None:
    # Every module of the package registers its executors when imported: host, CUDA, NIXL.
    # Imported here, not at module top, so that importing the registry stays cheap; numba's kernels
    # (`*_kernels` modules), cupy and NIXL load only when an executor binds.
    # the package's folder, not the package: its __init__ imports this registry
    for module in pkgutil.walk_packages([str(Path(__file__).parent)], prefix="kvbench.executors."):
        if not module.name.endswith("_kernels"):
            importlib.import_module(module.name)
