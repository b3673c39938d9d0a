"""Registry of benchmarks by id; the CLI lists it with availability on this host.

Benchmarks are discovered, not listed: every module under `kvbench/benches/` is imported once,
and each `@register`s its classes. Adding `area.verb` is one new module (plus its parameters in
`declared.py`, its path segment's peak function, `kvbench.hardware.path.register_segment`, and that
segment's rows in peaks.toml);
a module outside the package (a plugin, a test) registers the same way once it is imported.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from pathlib import Path
from typing import TYPE_CHECKING

from kvbench.errors import unknown_name

if TYPE_CHECKING:
    from kvbench.benches.base import Benchmark

_BENCHES: dict[str, Benchmark] = {}


def register(cls: type[Benchmark]) -> type[Benchmark]:
    """Class decorator: make a benchmark available under its `id` (one taking host memory gets the
    `pages` parameter: `params.with_pages`)."""
    from kvbench.benches.params import with_pages

    cls.params = with_pages(cls.params)
    _BENCHES[cls.id] = cls()
    return cls


@functools.cache
def _discover() -> None:
    # the package's folder, not the package: its __init__ imports this registry
    for module in pkgutil.walk_packages([str(Path(__file__).parent)], prefix="kvbench.benches."):
        importlib.import_module(module.name)


def registered(bench_id: str) -> Benchmark | None:
    """The benchmark registered as `bench_id` so far, None if none is: no module is imported to find it."""
    return _BENCHES.get(bench_id)


def find_bench(bench_id: str) -> Benchmark | None:
    """The benchmark registered as `bench_id`, None if no module registers it. Its area's module is
    imported first (`pcie.h2d` → benches/pcie), every module only when that does not register it: a
    command that describes one run's results (`results`, `history`, `compare`) imports the modules of
    the benchmarks it shows, not all of them and what they import (numpy, the executors)."""
    if bench_id not in _BENCHES:
        try:
            importlib.import_module(f"kvbench.benches.{bench_id.partition('.')[0]}")
        except ImportError:
            pass
    if bench_id not in _BENCHES:
        _discover()
    return _BENCHES.get(bench_id)


def get_bench(bench_id: str) -> Benchmark:
    """`find_bench`, refusing an id no module registers with the closest known one."""
    if (bench := find_bench(bench_id)) is None:
        raise unknown_name("benchmark", bench_id, _BENCHES)
    return bench


def all_benches() -> dict[str, Benchmark]:
    _discover()
    return dict(sorted(_BENCHES.items()))
