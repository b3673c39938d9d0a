"""scripts/gpu-check's step budgets (kvbench/plan/budget.py): the suite's time follows the cases it
plans on this host's GPUs and pairs, the tests' time the tests collected. GPUs come from the CUDA
stand-in (tests/gpu_standin): only the count of cases is real here, no time is measured."""

import subprocess
import sys

import pytest

from kvbench.errors import BadInput
from kvbench.plan.budget import CASE_S, step_budget_for_suite, step_budget_for_tests
from tests.gpu_standin.fixture import installed


def test_the_full_stage_s_budget_grows_with_the_gpu_count():
    budgets = {}
    for gpus in (1, 2, 8):
        with installed(gpus=gpus):
            budgets[gpus] = step_budget_for_suite("gpu-full")
    assert budgets[1].count < budgets[2].count < budgets[8].count
    assert budgets[1].seconds < budgets[2].seconds < budgets[8].seconds
    # every extra case (ordered pairs, per-GPU sweeps) is given its cost
    assert budgets[8].seconds - budgets[1].seconds >= (budgets[8].count - budgets[1].count) * CASE_S


def test_a_measured_cost_replaces_the_estimate(monkeypatch):
    with installed(gpus=2):
        estimated = step_budget_for_suite("gpu-smoke")
        monkeypatch.setenv("GPU_CHECK_CASE_S", "1.5")
        measured = step_budget_for_suite("gpu-smoke")
    assert measured.count == estimated.count and measured.seconds < estimated.seconds
    monkeypatch.setenv("GPU_CHECK_CASE_S", "fast")
    with pytest.raises(BadInput, match="bad GPU_CHECK_CASE_S='fast'"):
        step_budget_for_suite("gpu-smoke")


def test_the_tests_budget_counts_gpu_tests_and_cpu_side_ones():
    few, many = step_budget_for_tests(3, 28), step_budget_for_tests(29, 28)
    assert few.count == 31 and many.count == 57 and few.seconds < many.seconds


def test_the_entry_point_prints_count_and_seconds_and_refuses_bad_input_in_one_line():
    ok = subprocess.run([sys.executable, "-m", "kvbench.plan.budget", "tests", "29", "28"], capture_output=True,
                        text=True, timeout=120)
    assert ok.returncode == 0 and ok.stdout.split() == [str(v) for v in (57, step_budget_for_tests(29, 28).seconds)]
    bad = subprocess.run([sys.executable, "-m", "kvbench.plan.budget", "suite", "gpu-smoke", "size"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "bad override 'size'" in bad.stderr
