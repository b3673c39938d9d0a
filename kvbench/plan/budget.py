"""How long scripts/gpu-check gives each step: the cases a suite plans on this host, or the tests a
step collects, times a cost per case or per test, plus a fixed start-up.

The suite's count follows the host: `gpu = "*"` and `pair = "*"` expand per GPU and per ordered pair
(gpu-full plans 77 cases on one GPU, 111 on two, 363 on eight), so a fixed limit is either idle on one
GPU or kills the sweep on eight before its last cases. The costs are estimates until a GPU call has
measured them (docs/gpu-check.md: the first call's log gives the suite's seconds per case, its
`--durations=0` table the seconds per test); `GPU_CHECK_CASE_S` and `GPU_CHECK_TEST_S` carry the
measured figures to the next call without a code change.

    python -m kvbench.plan.budget suite SUITE [KEY=VALUE ...]   ->  "CASES SECONDS"
    python -m kvbench.plan.budget tests GPU_TESTS CPU_TESTS     ->  "TESTS SECONDS"
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass
from typing import Any

from kvbench.errors import BadInput

# Estimates, not measurements (no GPU call has timed them yet): a case is prepared, verified, warmed
# up and sampled 7 x >= 10 ms (gpu-* suites' settings) with a 256 MiB copy or a 1024-token restore.
CASE_S = 4.0
TEST_GPU_S = 3.0  # a tests/gpu test: its own case of several samples, or a broken copy caught
TEST_CPU_S = 1.0  # a CPU-side test (tests/benches/test_gpu_cpu_side.py)
SUITE_START_S = 60.0  # python, CUDA's start, NVRTC compiling the kernels, the database
TESTS_START_S = 30.0  # pytest's collection and imports


@dataclass(frozen=True)
class StepBudget:
    """A step's planned work (`count` cases or tests) and its time limit (`seconds`, whole seconds)."""

    count: int
    seconds: int


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


def step_budget_for_suite(suite: str, overrides: dict[str, Any] | None = None) -> StepBudget:
    """The cases suite `suite` plans on this host (its GPUs and pairs) with `overrides` (--set), and
    the seconds they are given: start-up plus a per-case cost (GPU_CHECK_CASE_S, else CASE_S)."""
    from kvbench.plan.cases import plan
    from kvbench.plan.suite import load_suite

    loaded, path, _text = load_suite(suite)
    cases = plan(loaded.bench, None, overrides or {}, source=str(path))
    return StepBudget(len(cases), math.ceil(SUITE_START_S + len(cases) * _cost("GPU_CHECK_CASE_S", CASE_S)))


def step_budget_for_tests(gpu_tests: int, cpu_tests: int) -> StepBudget:
    """`gpu_tests` GPU tests and `cpu_tests` CPU-side ones: start-up plus a cost per test
    (GPU_CHECK_TEST_S for a GPU test where measured)."""
    seconds = TESTS_START_S + gpu_tests * _cost("GPU_CHECK_TEST_S", TEST_GPU_S) + cpu_tests * TEST_CPU_S
    return StepBudget(gpu_tests + cpu_tests, math.ceil(seconds))


def _overrides(items: list[str]) -> dict[str, Any]:
    from kvbench.benches.params import coerce_text

    found = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise BadInput(f"bad override '{item}': KEY=VALUE, as kvbench run --set takes it")
        found[key] = coerce_text(value)
    return found


def main(argv: list[str]) -> int:
    usage = "usage: python -m kvbench.plan.budget suite SUITE [KEY=VALUE ...] | tests GPU_TESTS CPU_TESTS"
    try:
        if len(argv) >= 2 and argv[0] == "suite":
            budget = step_budget_for_suite(argv[1], _overrides(argv[2:]))
        elif len(argv) == 3 and argv[0] == "tests":
            if not (argv[1].isdigit() and argv[2].isdigit()):
                raise BadInput(f"bad test counts '{argv[1]}' '{argv[2]}': whole numbers")
            budget = step_budget_for_tests(int(argv[1]), int(argv[2]))
        else:
            print(usage, file=sys.stderr)
            return 2
    except BadInput as exc:
        print(f"kvbench.plan.budget: {exc}", file=sys.stderr)
        return 2
    print(budget.count, budget.seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
