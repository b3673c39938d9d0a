"""Registry of benchmarks by id; the CLI lists it with availability on this host."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvbench.errors import unknown_name

if TYPE_CHECKING:
    from kvbench.benches.base import Benchmark

_BENCHES: dict[str, Benchmark] = {}


def register(cls: type[Benchmark]) -> type[Benchmark]:
    _BENCHES[cls.id] = cls()
    return cls


def _load_builtin() -> None:
    from kvbench.benches import dram, hbm, kv, net, pcie, storage  # noqa: F401


def get_bench(bench_id: str) -> Benchmark:
    _load_builtin()
    if bench_id not in _BENCHES:
        raise unknown_name("benchmark", bench_id, _BENCHES)
    return _BENCHES[bench_id]


def all_benches() -> dict[str, Benchmark]:
    _load_builtin()
    return dict(sorted(_BENCHES.items()))
