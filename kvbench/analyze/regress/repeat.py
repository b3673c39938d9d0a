"""What `kvbench run --repeat N` prints after its last run: how far each case's median moved over the
runs, and the allowance a later `compare` gives it (`noise.case_allowance`, against the base it names)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kvbench.analyze.regress.compare import fast_end
from kvbench.analyze.regress.noise import THRESHOLD, Allowance, allowed_drop, case_allowance


@dataclass(frozen=True)
class RepeatSpread:
    """How far one case's median moved over runs of the same selection (`kvbench run --repeat`), and
    the allowance a later `compare` gives it (from the same runs' fast ends, as `case_history` reads them)."""

    bench: str
    params: dict[str, Any]
    medians: list[float]  # GB/s, one per run where the case was ok, in run order
    low: float
    high: float
    between_run: float | None  # relative robust sd of the fast ends over the runs; None with fewer than MIN_HISTORY
    allowance_ln: float  # the |ln(new / base)| a later compare must see to call the case slower or faster
    allowed: Allowance | None = None  # the same, with the base it is against and whether it is too noisy to gate

    @property
    def allowed_drop(self) -> float:
        return allowed_drop(self.allowance_ln)


def repeat_spread(runs: list[list[dict[str, Any]]], threshold: float = THRESHOLD,
                  base_runs: int = 1) -> list[RepeatSpread]:
    """Per case (in the first run's order) of `runs` (each a run's result rows), its medians across
    the runs and the between-run noise their fast ends show, contended or not (the history a later
    compare weighs); `base_runs`: how many runs compare's base is the median of (a --repeat baseline's)."""
    medians: dict[str, list[float]] = {}
    fast: dict[str, list[float]] = {}
    heads: dict[str, tuple[str, dict[str, Any]]] = {}
    for results in runs:
        for r in results:
            heads.setdefault(r["case"], (r["bench"], r["params"]))
            if r["status"] == "ok" and r["gbps"] and r["gbps"].get("median"):
                medians.setdefault(r["case"], []).append(float(r["gbps"]["median"]))
                fast.setdefault(r["case"], []).append(fast_end(r))
    out = []
    for case, (bench, params) in heads.items():
        values = medians.get(case, [])
        if not values:
            continue
        allowed = case_allowance(fast[case], threshold, base_runs)
        out.append(RepeatSpread(bench, params, values, min(values), max(values), allowed.noise, allowed.ln, allowed))
    return out
