"""Where the shipped data lives: `suites/` and `kernels/`, in a wheel or in a source checkout."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """The folder `name` (`suites` or `kernels`): packaged copy first, then the checkout's."""
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"kvbench data folder '{name}' is missing from this installation")


def suites_dir() -> Path:
    return data_dir("suites")


def kernels_dir() -> Path:
    return data_dir("kernels")
