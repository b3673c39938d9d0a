"""What every crosscheck shares: a figure from kvbench or a peer tool, and one kvbench case run
the way `kvbench run` runs it (the same engine, checks and peaks)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kvbench.benches.registry import get_bench
from kvbench.measure.engine import Pair, Settings
from kvbench.overall import FAIL, INCOMPLETE, PASS, SHOWN, Overall
from kvbench.plan.cases import Case
from kvbench.run.result import Result
from kvbench.run.runner import run_case


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
    from kvbench.run.this_host import host_facts

    spec = get_bench(bench)
    canonical = spec.canonical_params(params)
    spec.validate(canonical)  # memory, disk and parameters checked as `kvbench run` checks them
    return run_case(Case(bench, canonical), host_facts(gpus=gpus, dram=False), settings, pair=pair)


def tool_failed(proc: Any) -> str:
    """Why a peer tool's run gave no figure, never empty: its exit status and the last line it wrote
    (a tool that fails silently, as ucx_perftest does when its transports cannot connect, says so)."""
    said = [line.strip() for line in f"{proc.stderr or ''}\n{proc.stdout or ''}".splitlines() if line.strip()]
    return f"failed: exit status {proc.returncode}; " + (said[-1][:160] if said else "it printed nothing")


def tool_timed_out(exc: subprocess.TimeoutExpired) -> str:
    """Why a peer tool that ran past its bound gave no figure: its name and the bound (it was killed)."""
    return f"failed: {Path(str(exc.cmd[0])).name} did not finish within {exc.timeout:g} s (killed)"


def crosscheck_verdict(figures: tuple[Figure, list[Figure]], goal: float | None, goal_max: float | None = None,
                       label: str = "") -> Overall:
    """kvbench over the best comparable peer, judged against the printed goal: PASS within it, FAIL
    outside it, INCOMPLETE (exit 3) with the reason where kvbench's case or every comparable peer
    tool could not run. Without a goal the ratio is shown, not judged: SHOWN (exit 0), never PASS."""
    ours, peers = figures
    head = f"{label}: " if label else ""
    if not ours.gbps:
        return Overall(INCOMPLETE, (f"{head}{ours.name} gave no figure ({ours.note})",))
    comparable = [p for p in peers if p.comparable]
    best = max((p for p in comparable if p.gbps), key=lambda p: p.gbps, default=None)
    if best is None:
        why = "; ".join(f"{p.name}: {p.note}" for p in comparable) or "no peer tool"
        return Overall(INCOMPLETE, (f"{head}no peer tool could run ({why})",))
    ratio = best.ratio_to(ours)  # paired where both were timed in one case, as the table prints it
    if goal is None:
        return Overall(SHOWN, (f"{head}kvbench / {best.name} {ratio:.2f} (shown, not judged: no goal)",))
    within = ratio >= goal and (goal_max is None or ratio <= goal_max)
    wanted = f"≥ {goal:.2f}" if goal_max is None else f"{goal:.2f}–{goal_max:.2f}"
    return Overall(PASS if within else FAIL,
                   (f"{head}kvbench / {best.name} {ratio:.2f} {'within' if within else 'misses'} the goal {wanted}",))
