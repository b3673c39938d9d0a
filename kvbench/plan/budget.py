"""How long scripts/gpu-check plans each step and each call: the cases a suite runs on this host, or the
tests a step collects, times a cost per case or per test, plus a fixed start-up; the other steps at their
own estimates; a stage's whole call against the most one device command may run (`GPU_CHECK_CALL_S`,
600 s by default), so a stage that would be cut is refused before it starts.

The suite's count follows the host: `gpu = "*"` and `pair = "*"` expand per GPU and per ordered pair, and
a case this host cannot run (gpu.p2p and kv.handoff on one GPU: `case_unavailable_reason`) skips in no
time, so it costs nothing. The costs are estimates until a GPU call has measured them (docs/gpu-check.md:
the call's log prints the seconds per case that RAN and the slowest GPU test); `GPU_CHECK_CASE_S` and
`GPU_CHECK_TEST_S` carry the measured figures to the next call without a code change.

    python -m kvbench.plan.budget suite SUITE [KEY=VALUE ...]   ->  "CASES SECONDS SKIPPING"
    python -m kvbench.plan.budget tests GPU_TESTS CPU_TESTS     ->  "TESTS SECONDS"
    python -m kvbench.plan.budget call STAGE SUITE_S TESTS_S NVBANDWIDTH(yes|no)  ->  "SECONDS LIMIT" + the steps
    python -m kvbench.plan.budget measured RUN_JSON SECONDS     ->  the cost per case that ran, in words
    python -m kvbench.plan.budget measured-tests JUNIT_XML      ->  the cost per GPU test that ran, in words
"""

from __future__ import annotations

import json
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kvbench.errors import BadInput

# Estimates, not measurements (no GPU call has timed them yet): a case is prepared, verified, warmed
# up and sampled 7 x >= 10 ms (gpu-* suites' settings) with a 256 MiB copy or a 1024-token restore.
CASE_S = 4.0
TEST_GPU_S = 3.0  # a tests/gpu test: its own case of several samples, or a broken copy caught
TEST_CPU_S = 1.0  # a CPU-side test (tests/benches/test_gpu_cpu_side.py)
SUITE_START_S = 60.0  # python, CUDA's start, NVRTC compiling the kernels, the database
TESTS_START_S = 30.0  # pytest's collection and imports
# The other steps' planned seconds (estimates, not measurements): python's start and what each does on
# one GPU. nvbandwidth runs its four CE tests at 256 MiB once; `crosscheck pcie` reads that output and
# measures kvbench's three cases (9 samples each) beside it.
STEP_S = {"kvbench info": 15, "run JSON": 10, "ce-batch ran": 5, "nvbandwidth": 30, "crosscheck pcie": 40,
          "accept": 20, "report": 30}
# What each stage runs, in order ("suite" and "GPU tests" are planned from what they count here)
STAGES = {
    "smoke": ("kvbench info", "suite", "run JSON", "ce-batch ran", "nvbandwidth", "crosscheck pcie", "accept", "report"),
    "full": ("kvbench info", "suite", "run JSON", "ce-batch ran", "accept", "report"),
    "tests": ("kvbench info", "GPU tests"),
}
CALL_S = 600  # the most one device command may run (the device tool's limit): GPU_CHECK_CALL_S overrides


@dataclass(frozen=True)
class StepBudget:
    """A step's planned work (`count` cases or tests, `skipping` of them skip here) and its time limit
    (`seconds`, whole seconds)."""

    count: int
    seconds: int
    skipping: int = 0


def _cost(variable: str, default: float) -> float:
    """A per-case or per-test cost in seconds: `variable` from the environment (a measured figure) or
    the estimate."""
    text = os.environ.get(variable, "")
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        raise BadInput(f"bad {variable}='{text}': seconds, e.g. 2.5") from None
    if not 0 < value < 3600:
        raise BadInput(f"bad {variable}={text}: seconds between 0 and 3600")
    return value


def call_limit_s() -> int:
    """The most seconds one call may run: GPU_CHECK_CALL_S, else CALL_S."""
    return math.ceil(_cost("GPU_CHECK_CALL_S", CALL_S))


def step_budget_for_suite(suite: str, overrides: dict[str, Any] | None = None) -> StepBudget:
    """The cases suite `suite` plans on this host (its GPUs and pairs) with `overrides` (--set), and
    the seconds they are given: start-up plus a per-case cost (GPU_CHECK_CASE_S, else CASE_S) for every
    case that can run here (one that skips here, for want of a second GPU or of CUDA, costs nothing)."""
    from kvbench.benches.registry import get_bench
    from kvbench.plan.cases import plan
    from kvbench.plan.suite import load_suite

    loaded, path, _text = load_suite(suite)
    cases = plan(loaded.bench, None, overrides or {}, source=str(path))
    skipping = sum(1 for case in cases if get_bench(case.bench).case_unavailable_reason(case.params))
    seconds = SUITE_START_S + (len(cases) - skipping) * _cost("GPU_CHECK_CASE_S", CASE_S)
    return StepBudget(len(cases), math.ceil(seconds), skipping)


def step_budget_for_tests(gpu_tests: int, cpu_tests: int) -> StepBudget:
    """`gpu_tests` GPU tests and `cpu_tests` CPU-side ones: start-up plus a cost per test
    (GPU_CHECK_TEST_S for a GPU test where measured)."""
    seconds = TESTS_START_S + gpu_tests * _cost("GPU_CHECK_TEST_S", TEST_GPU_S) + cpu_tests * TEST_CPU_S
    return StepBudget(gpu_tests + cpu_tests, math.ceil(seconds))


def call_plan(stage: str, suite_s: int, tests_s: int, nvbandwidth: bool = True) -> list[tuple[str, int]]:
    """(step, planned seconds) of a stage's whole call: the suite and the tests as planned here, every
    other step at its estimate (nvbandwidth and its crosscheck only where the binary was carried)."""
    if stage not in STAGES:
        raise BadInput(f"bad stage '{stage}': choose {', '.join(STAGES)}")
    out = []
    for step in STAGES[stage]:
        if step in ("nvbandwidth", "crosscheck pcie") and not nvbandwidth:
            continue
        out.append((step, suite_s if step == "suite" else tests_s if step == "GPU tests" else STEP_S[step]))
    return out


def measured_line(run: dict[str, Any], seconds: float) -> str:
    """The suite step's measured cost per case that ran (ok or failed; a skipped case takes no time), in
    words and as the GPU_CHECK_CASE_S the next call's plan takes. An upper bound: the step's start-up
    (python, CUDA, NVRTC) is in it."""
    results = run.get("results") or []
    ran = [r for r in results if r.get("status") in ("ok", "failed")]
    skipped = len(results) - len(ran)
    if not ran:
        return f"{len(results)} case(s), none ran ({skipped} skipped): no cost per case measured"
    per = seconds / len(ran)
    return (f"{len(ran)} case(s) ran, {skipped} skipped, in {seconds:g} s: {per:.1f} s per case that ran "
            f"(start-up included) -> GPU_CHECK_CASE_S={math.ceil(per * 10) / 10:g}")


def measured_tests_line(junit: str) -> str:
    """The GPU tests' measured cost from pytest's JUnit XML: per tests/gpu test that ran (a skipped one takes
    no time), and the slowest, with the GPU_CHECK_TEST_S the next call's plan takes (the mean: the plan is a sum)."""
    import xml.etree.ElementTree as ET

    cases = [c for c in ET.parse(junit).getroot().iter("testcase") if (c.get("classname") or "").startswith("tests.gpu.")]
    ran = [c for c in cases if c.find("skipped") is None]
    if not ran:
        return f"{len(cases)} tests/gpu test(s), none ran: no cost per test measured"
    took = [float(c.get("time") or 0) for c in ran]
    slowest = max(range(len(ran)), key=took.__getitem__)
    mean = sum(took) / len(took)
    return (f"{len(ran)} tests/gpu test(s) ran, {len(cases) - len(ran)} skipped, in {sum(took):.1f} s: {mean:.1f} s "
            f"per test that ran, the slowest {took[slowest]:.1f} s ({ran[slowest].get('name')}) -> "
            f"GPU_CHECK_TEST_S={math.ceil(mean * 10) / 10:g}")


def _overrides(items: list[str]) -> dict[str, Any]:
    from kvbench.benches.params import coerce_text

    found = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise BadInput(f"bad override '{item}': KEY=VALUE, as kvbench run --set takes it")
        found[key] = coerce_text(value)
    return found


def _whole(text: str, what: str) -> int:
    if not text.isdigit():
        raise BadInput(f"bad {what} '{text}': a whole number")
    return int(text)


def main(argv: list[str]) -> int:
    usage = ("usage: python -m kvbench.plan.budget suite SUITE [KEY=VALUE ...] | tests GPU_TESTS CPU_TESTS | "
             "call STAGE SUITE_S TESTS_S yes|no | measured RUN_JSON SECONDS | measured-tests JUNIT_XML")
    try:
        if len(argv) >= 2 and argv[0] == "suite":
            budget = step_budget_for_suite(argv[1], _overrides(argv[2:]))
            print(budget.count, budget.seconds, budget.skipping)
        elif len(argv) == 3 and argv[0] == "tests":
            budget = step_budget_for_tests(_whole(argv[1], "test count"), _whole(argv[2], "test count"))
            print(budget.count, budget.seconds)
        elif len(argv) == 5 and argv[0] == "call":
            steps = call_plan(argv[1], _whole(argv[2], "suite seconds"), _whole(argv[3], "tests seconds"),
                              argv[4] == "yes")
            print(sum(s for _n, s in steps), call_limit_s())
            print(", ".join(f"{name} {s} s" for name, s in steps))
        elif len(argv) == 3 and argv[0] == "measured":
            run = json.loads(Path(argv[1]).read_text())
            print(measured_line(run, float(argv[2])))
        elif len(argv) == 2 and argv[0] == "measured-tests":
            print(measured_tests_line(argv[1]))
        else:
            print(usage, file=sys.stderr)
            return 2
    except (BadInput, OSError, ValueError, SyntaxError) as exc:  # ET.ParseError is a SyntaxError
        print(f"kvbench.plan.budget: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
