"""One sweep of a suite, expanded and validated in one place: its benchmark is looked up in the
registry once, and every check, count and expansion below works on that object (a plan's trip goes
down — suite, sweep, benchmark, parameters — never back to the registry for each case)."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

from kvbench.benches.base import Benchmark
from kvbench.benches.describe import canonical_subset_of
from kvbench.benches.params import case_hash
from kvbench.benches.registry import get_bench
from kvbench.plan.suite import BenchSweep


def sweep_values(value: Any, name: str = "") -> list[Any]:
    """A sweep's values; `numa:*` stands for every NUMA node this host has, and `gpu = "*"` for
    every CUDA device (GPU 0 alone where CUDA is unavailable, so the case says why it skipped), and
    `pair = "*"` every ordered pair of them (gpu.p2p's matrix; "0-1" alone under two GPUs)."""
    values = list(value) if isinstance(value, list) else [value]
    out: list[Any] = []
    for v in values:
        if v == "numa:*":
            from kvbench.memory.numa import online_nodes

            out.extend(f"numa:{n}" for n in online_nodes())
        elif name == "gpu" and v == "*":
            from kvbench.backends.cuda import device_count

            out.extend(range(max(device_count(), 1)))
        elif name == "pair" and v == "*":
            from kvbench.backends.cuda import device_count
            from kvbench.benches.p2p import every_pair

            out.extend(every_pair(device_count()))
        else:
            out.append(v)
    return out


@dataclass(frozen=True)
class Sweep:
    """A suite's `[[bench]]` entry and its benchmark (`BadInput` from `of` for an unknown id)."""

    spec: BenchSweep
    bench: Benchmark

    @classmethod
    def of(cls, spec: BenchSweep) -> Sweep:
        return cls(spec, get_bench(spec.id))

    def takes(self, name: str) -> bool:
        return name in self.bench.params

    def raw(self, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
        """The sweep's parameters as written, with the overrides its benchmark takes laid over them."""
        return {**self.spec.params, **{k: v for k, v in (overrides or {}).items() if self.takes(k)}}

    def check(self) -> None:
        """`BadInput` for a parameter the benchmark does not take, or a value that does not parse."""
        for name, value in self.spec.params.items():
            for v in sweep_values(value, name):
                canonical_subset_of(self.bench, {name: v}, strict=True)

    def combinations(self, overrides: dict[str, Any] | None = None) -> int:
        """How many cases the sweep expands to before excludes: counted, never built."""
        return math.prod(len(sweep_values(value, name)) for name, value in self.raw(overrides).items())

    def expand(self, overrides: dict[str, Any] | None = None) -> list[tuple[dict[str, Any], str]]:
        """(canonical params, case hash) of every combination of the sweep's list values, overrides
        applied, excludes removed, each case once."""
        raw = self.raw(overrides)
        names = list(raw)
        excludes = [canonical_subset_of(self.bench, e, strict=True) for e in self.spec.exclude]
        out: list[tuple[dict[str, Any], str]] = []
        seen: set[str] = set()
        for combo in itertools.product(*(sweep_values(raw[n], n) for n in names)):
            params = self.bench.canonical_params(dict(zip(names, combo, strict=True)))
            if any(all(params[k] == v for k, v in ex.items()) for ex in excludes):
                continue
            self.bench.validate(params)
            key = case_hash(self.spec.id, params, self.bench.params)
            if key not in seen:
                seen.add(key)
                out.append((params, key))
        return out
