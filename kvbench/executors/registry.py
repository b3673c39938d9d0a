"""Registry of executors by name, so the CLI can list them and suites can name them."""

from __future__ import annotations

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


def all_executors() -> dict[str, Executor]:
    _load_builtin()
    return dict(_EXECUTORS)


def _load_builtin() -> None:
    # Imported here, not at module top, so that importing the registry stays cheap and a
    # module with heavy imports (numba, cupy) only loads when executors are asked for.
    from kvbench.executors import host  # noqa: F401
