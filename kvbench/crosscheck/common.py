"""What every crosscheck shares: a figure from kvbench or a peer tool, and one kvbench case run
the way `kvbench run` runs it (the same engine, checks and peaks)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kvbench.benches.registry import get_bench
from kvbench.measure.engine import Pair, Settings
from kvbench.plan.cases import Case
from kvbench.result import Result
from kvbench.runner import run_case


@dataclass(frozen=True)
class Figure:
    """One tool's rate in decimal GB/s (None when it could not run, `note` says why)."""

    name: str
    gbps: float | None
    note: str
    comparable: bool = True  # measures the same thing as the kvbench case it sits beside
    paired: dict[str, Any] | None = None  # kvbench over this tool per pair of interleaved samples (metadata `paired`)

    def ratio_to(self, ours: Figure) -> float | None:
        """kvbench over this tool: the paired ratio where both were timed in one case, else the rates divided."""
        if self.paired is not None:
            return self.paired["median"]
        return ours.gbps / self.gbps if ours.gbps and self.gbps else None


def run_kvbench(bench: str, params: dict[str, Any], settings: Settings, gpus: bool = False,
                pair: Callable[[], Pair] | None = None) -> Result:
    """One kvbench case, canonicalised and measured on this host's facts (GPUs read only if asked);
    `pair` builds a peer's side to time interleaved with it (runner.run_case)."""
    from kvbench.this_host import host_facts

    spec = get_bench(bench)
    canonical = spec.canonical_params(params)
    spec.validate(canonical)  # memory, disk and parameters checked as `kvbench run` checks them
    return run_case(Case(bench, canonical), host_facts(gpus=gpus, dram=False), settings, pair=pair)
