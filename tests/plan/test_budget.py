"""scripts/gpu-check's plans (kvbench/plan/budget.py): the suite's time follows the cases that RUN on this
host's GPUs and pairs (a case that skips here costs nothing), the tests' time the tests collected, and a
stage's whole call must fit the device's command limit. GPUs come from the CUDA stand-in
(tests/gpu_standin), presenting itself as the lent H100 where a test says so: only the count of cases is
real here, every second is an estimate, none is measured."""

import json
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from kvbench.errors import BadInput
from kvbench.plan.budget import (
    CALL_S,
    CASE_S,
    STAGES,
    call_limit_s,
    call_plan,
    measured_line,
    measured_tests_line,
    step_budget_for_suite,
    step_budget_for_tests,
)
from tests.gpu_standin.fixture import installed

# tests/gpu and the CPU-side file as collected when this was written (58 GPU tests, 28 CPU-side): the
# tests stage's own count comes from pytest's collection on the host; these stand for it here
GPU_TESTS, CPU_TESTS = 58, 28


def whole_call(stage: str, gpus: int, model: str | None = None) -> int:
    """The planned seconds of a stage's whole call on `gpus` simulated GPUs (dressed as `model`)."""
    with installed(gpus=gpus) as machine:
        if model:
            from gpu_standin.machine import dress  # the stand-in's, importable while it is installed

            dress(machine, model)
        suite_s = step_budget_for_suite(f"gpu-{stage}").seconds if stage != "tests" else 0
    tests_s = step_budget_for_tests(GPU_TESTS, CPU_TESTS).seconds if stage == "tests" else 0
    return sum(seconds for _step, seconds in call_plan(stage, suite_s, tests_s, nvbandwidth=True))


@pytest.mark.parametrize("stage", list(STAGES))
def test_every_stage_s_call_on_one_h100_plans_under_the_command_limit(stage):
    """Issue 55: the lent H100 (one GPU) runs every stage as one call, each planned under 600 s."""
    assert whole_call(stage, 1, "h100-vm") <= CALL_S == call_limit_s()


def test_two_smoke_calls_and_a_start_fit_twelve_minutes_on_the_estimates():
    assert 180 + 2 * whole_call("smoke", 1, "h100-vm") <= 12 * 60


def test_the_full_stage_s_budget_grows_with_the_gpu_count_and_eight_gpus_are_over_one_call():
    budgets = {}
    for gpus in (1, 2, 8):
        with installed(gpus=gpus):
            budgets[gpus] = step_budget_for_suite("gpu-full")
    assert budgets[1].count < budgets[2].count < budgets[8].count
    assert budgets[1].seconds < budgets[2].seconds < budgets[8].seconds
    # every extra case that runs (ordered pairs, per-GPU sweeps) is given its cost
    ran = {gpus: b.count - b.skipping for gpus, b in budgets.items()}
    assert budgets[8].seconds - budgets[1].seconds >= (ran[8] - ran[1]) * CASE_S
    assert whole_call("full", 2) <= CALL_S < whole_call("full", 8)  # gpu-check refuses eight GPUs' full call


def test_a_case_that_skips_here_costs_nothing():
    """gpu.p2p and kv.handoff need two GPUs: on one they skip in no time, so the plan gives them none."""
    with installed(gpus=1):
        one = step_budget_for_suite("gpu-smoke")
    with installed(gpus=2):
        two = step_budget_for_suite("gpu-smoke")
    assert one.count == two.count and one.skipping == two.skipping + 2
    assert two.seconds - one.seconds == pytest.approx(2 * CASE_S, abs=1)


def test_a_measured_cost_replaces_the_estimate(monkeypatch):
    with installed(gpus=2):
        estimated = step_budget_for_suite("gpu-smoke")
        monkeypatch.setenv("GPU_CHECK_CASE_S", "1.5")
        measured = step_budget_for_suite("gpu-smoke")
    assert measured.count == estimated.count and measured.seconds < estimated.seconds
    monkeypatch.setenv("GPU_CHECK_CASE_S", "fast")
    with pytest.raises(BadInput, match="bad GPU_CHECK_CASE_S='fast'"):
        step_budget_for_suite("gpu-smoke")
    monkeypatch.setenv("GPU_CHECK_CALL_S", "300")
    assert call_limit_s() == 300


def test_the_tests_budget_counts_gpu_tests_and_cpu_side_ones():
    few, many = step_budget_for_tests(3, 28), step_budget_for_tests(29, 28)
    assert few.count == 31 and many.count == 57 and few.seconds < many.seconds


def test_a_call_plan_names_its_steps_and_runs_nvbandwidth_once_where_carried():
    steps = dict(call_plan("smoke", 100, 0, nvbandwidth=True))
    assert list(steps)[:2] == ["kvbench info", "suite"] and steps["suite"] == 100
    assert "nvbandwidth" in steps and "crosscheck pcie" in steps and "GPU tests" not in steps
    assert "nvbandwidth" not in dict(call_plan("smoke", 100, 0, nvbandwidth=False))
    assert dict(call_plan("tests", 0, 200))["GPU tests"] == 200 and "suite" not in dict(call_plan("tests", 0, 200))
    with pytest.raises(BadInput, match="bad stage 'medium'"):
        call_plan("medium", 1, 1)


def test_the_measured_cost_per_case_is_over_the_cases_that_ran():
    run = {"results": [{"status": "ok"}] * 10 + [{"status": "failed"}] + [{"status": "skipped"}] * 2}
    line = measured_line(run, 110)
    assert "11 case(s) ran, 2 skipped, in 110 s: 10.0 s per case that ran" in line and "GPU_CHECK_CASE_S=10" in line
    assert "none ran" in measured_line({"results": [{"status": "skipped"}]}, 5)


def test_the_measured_cost_per_test_is_over_the_tests_that_ran(tmp_path):
    xml = tmp_path / "t.xml"
    suite = ET.Element("testsuite")
    for name, time, skipped in [("a", "2.0", False), ("b", "4.0", False), ("c", "0.0", True)]:
        case = ET.SubElement(suite, "testcase", classname="tests.gpu.test_gpu_benches", name=name, time=time)
        if skipped:
            ET.SubElement(case, "skipped")
    ET.SubElement(suite, "testcase", classname="tests.benches.test_gpu_cpu_side", name="d", time="9.0")
    ET.ElementTree(ET.Element("testsuites")).getroot().append(suite)
    ET.ElementTree(suite).write(xml)
    line = measured_tests_line(str(xml))
    assert "2 tests/gpu test(s) ran, 1 skipped, in 6.0 s: 3.0 s per test that ran, the slowest 4.0 s (b)" in line
    assert line.endswith("GPU_CHECK_TEST_S=3")


def test_the_entry_point_prints_its_figures_and_refuses_bad_input_in_one_line(tmp_path):
    def budget(*args):
        return subprocess.run([sys.executable, "-m", "kvbench.plan.budget", *args], capture_output=True, text=True,
                              timeout=120, check=False)

    ok = budget("tests", "29", "28")
    assert ok.returncode == 0 and ok.stdout.split() == [str(v) for v in (57, step_budget_for_tests(29, 28).seconds)]
    call = budget("call", "full", "300", "0", "no")
    total, limit = call.stdout.splitlines()[0].split()
    assert call.returncode == 0 and int(total) == 300 + 15 + 10 + 5 + 20 + 30 and int(limit) == CALL_S
    (tmp_path / "run.json").write_text(json.dumps({"results": [{"status": "ok"}]}))
    assert "1 case(s) ran" in budget("measured", str(tmp_path / "run.json"), "7").stdout
    bad = budget("suite", "gpu-smoke", "size")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "bad override 'size'" in bad.stderr
    bad = budget("call", "full", "x", "0", "no")
    assert bad.returncode == 2 and "bad suite seconds 'x'" in bad.stderr
