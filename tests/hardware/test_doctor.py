"""`kvbench doctor`: each check on a recorded /proc and /sys tree (and a fake NVML), and the command's
exit status agreeing with its verdict whatever the machine running the tests is doing."""

import json
from types import SimpleNamespace

import pytest

from kvbench.hardware import doctor
from kvbench.hardware.doctor import Box, Finding, needs_fixing, run_checks
from tests.conftest import run_cli
from tests.hardware.fake_proc import write_proc
from tests.hardware.test_contention import FakeNvml


def write(root, path, value):
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(f"{value}\n")


def test_the_governor_must_be_performance_on_every_cpu(tmp_path):
    write(tmp_path, "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "performance")
    write(tmp_path, "sys/devices/system/cpu/cpu1/cpufreq/scaling_governor", "powersave")
    found = doctor.Governor().check(Box(root=str(tmp_path)))
    assert found.state == "fix" and found.seen == "performance on CPU 0, powersave on CPU 1"
    assert "cpupower frequency-set -g performance" in found.todo
    write(tmp_path, "sys/devices/system/cpu/cpu1/cpufreq/scaling_governor", "performance")
    assert doctor.Governor().check(Box(root=str(tmp_path))).state == "ok"


def test_a_vm_without_cpufreq_says_why_nothing_was_read(tmp_path):
    (tmp_path / "sys/devices/system/cpu/cpu0").mkdir(parents=True)
    found = doctor.Governor().check(Box(root=str(tmp_path)))
    assert found.state == "n/a" and found.seen == "no cpufreq in sysfs"
    assert doctor.Turbo().check(Box(root=str(tmp_path))).state == "n/a"


@pytest.mark.parametrize("path,value,state", [
    ("sys/devices/system/cpu/intel_pstate/no_turbo", "0", "advice"),
    ("sys/devices/system/cpu/intel_pstate/no_turbo", "1", "ok"),
    ("sys/devices/system/cpu/cpufreq/boost", "1", "advice"),
    ("sys/devices/system/cpu/cpufreq/boost", "0", "ok"),
])
def test_turbo_on_is_advice_not_a_fault(tmp_path, path, value, state):
    write(tmp_path, path, value)
    assert doctor.Turbo().check(Box(root=str(tmp_path))).state == state


def test_background_load_is_sampled_over_the_window_and_names_the_hog(tmp_path):
    write_proc(tmp_path, [1000, 0, 0, 1000, 0, 0, 0, 0], {200: ("stress", 1, 0, 0)})

    def wait(seconds):  # the window passes: a hog used 1.5 of the 2 CPUs
        assert seconds == 2.0
        write_proc(tmp_path, [1300, 0, 0, 1100, 0, 0, 0, 0], {200: ("stress", 1, 300, 0)})

    clock = iter([0.0, 2.0])
    found = doctor.BackgroundLoad().check(Box(root=str(tmp_path), wait=wait, clock=lambda: next(clock), own_pid=50))
    assert found.state == "fix" and "stress (1.50 CPU)" in found.todo
    assert found.seen.startswith("over 2.0 s: others 75% of the CPUs")


def test_a_quiet_box_has_no_background_load(tmp_path):
    write_proc(tmp_path, [1000, 0, 0, 1000, 0, 0, 0, 0], {})
    clock = iter([0.0, 2.0])
    box = Box(root=str(tmp_path), wait=lambda s: write_proc(tmp_path, [1004, 0, 0, 1396, 0, 0, 0, 0], {}),
              clock=lambda: next(clock), own_pid=50)
    assert doctor.BackgroundLoad().check(box).state == "ok"


@pytest.mark.parametrize("total_kib,free_kib,state", [(8 << 20, 8 << 20, "ok"), (8 << 20, (8 << 20) - (512 << 10), "fix"),
                                                      (0, 0, "ok")])
def test_swap_in_use_needs_fixing(tmp_path, total_kib, free_kib, state):
    write(tmp_path, "proc/meminfo", f"MemTotal: 1000 kB\nSwapTotal: {total_kib} kB\nSwapFree: {free_kib} kB")
    assert doctor.Swap().check(Box(root=str(tmp_path))).state == state


def test_cpu_throttle_events_since_boot_are_advice(tmp_path):
    write(tmp_path, "sys/devices/system/cpu/cpu0/thermal_throttle/core_throttle_count", "0")
    assert doctor.CpuThrottling().check(Box(root=str(tmp_path))).state == "ok"
    write(tmp_path, "sys/devices/system/cpu/cpu1/thermal_throttle/core_throttle_count", "12")
    found = doctor.CpuThrottling().check(Box(root=str(tmp_path)))
    assert found.state == "advice" and found.seen == "12 throttle event(s) since boot"


class DoctorNvml(FakeNvml):
    def nvmlDeviceGetCount(self):
        return 1

    def nvmlDeviceGetHandleByIndex(self, i):
        return SimpleNamespace(bus="0000:17:00.0")

    def nvmlDeviceGetPersistenceMode(self, h):
        return self.persistence


@pytest.mark.parametrize("others,reasons,persistence,state,words", [
    ([], 0x1, 1, "ok", ""),
    ([SimpleNamespace(pid=777, usedGpuMemory=1)], 0x1, 1, "fix", "other process(es) on it (pid 777)"),
    ([], 0x8, 1, "fix", "clocks throttled (hw_slowdown)"),
    ([], 0x1, 0, "advice", "persistence mode off"),
])
def test_gpus_other_processes_and_throttling_need_fixing(others, reasons, persistence, state, words):
    nvml = DoctorNvml(reasons=reasons, others=others)
    nvml.persistence = persistence
    found = doctor.Gpus().check(Box(nvml=nvml, own_pid=100))
    assert found.state == state and words in found.todo and "0000:17:00.0 61 °C" in found.seen


def test_without_nvml_the_gpu_check_is_not_applicable():
    assert doctor.Gpus().check(Box(nvml=None)).state == "n/a"


def test_a_check_that_breaks_is_reported_not_raised():
    class Broken(doctor.Check):
        name = "broken"

        def check(self, box):
            raise OSError("no such file")

    (found,) = run_checks(Box(), (Broken(),))
    assert found == Finding("broken", "n/a", "could not be read", "OSError: no such file")
    assert needs_fixing([found, Finding("x", "fix", "y")]) == [Finding("x", "fix", "y")]


def test_the_command_exits_1_exactly_when_its_verdict_is_fail():
    proc = run_cli("doctor", "--seconds", "0.2", "--json", "-")
    doc = json.loads(proc.stdout)
    assert [c["check"] for c in doc["checks"]] == [c.name for c in doctor.CHECKS]
    fixes = [c for c in doc["checks"] if c["state"] == "fix"]
    assert doc["verdict"] == ("FAIL" if fixes else "PASS") and proc.returncode == doc["exit_status"] == (1 if fixes else 0)
    assert doc["reasons"] == ([f"{c['check']}: {c['todo']}" for c in fixes] or ["nothing to fix before an acceptance run"])
    assert proc.stderr.strip().splitlines()[-1].startswith(doc["verdict"])


def test_a_bad_window_is_one_line():
    proc = run_cli("doctor", "--seconds", "0")
    assert proc.returncode == 2 and proc.stderr.strip() == "kvbench: error: bad --seconds 0: give a window between 0 and 600 s"
