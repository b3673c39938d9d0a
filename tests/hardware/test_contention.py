"""Contention seen over a case: the host read from a fake /proc and /sys (two snapshots written by
the test), the GPUs through a fake NVML module, and the judgement against the named limits. Nothing
here depends on how busy the machine running the tests is."""

import os
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import pynvml
import pytest

from kvbench.hardware import contention, nvml_watch, proc_load
from kvbench.hardware.facts import Gpu, HostFacts, Link
from kvbench.hardware.proc_load import TICKS_PER_S
from tests.hardware.fake_proc import write_proc

OWN, CHILD, HOG, DAEMON = 100, 101, 200, 300


def two_snapshots(root: Path, seconds: float = 2.0, hog_ticks: int = 300, **after):
    """Before and after a case of `seconds` on 2 CPUs: this process used 150 jiffies (100 itself, 30 a
    live child, 20 a child it waited for), the hog `hog_ticks`, a daemon 10."""
    write_proc(root, [1000, 0, 200, 5000, 10, 0, 0, 0],
               {OWN: ("python", 1, 500, 0), CHILD: ("fio (job)", OWN, 0, 0), HOG: ("stress", 1, 1000, 0),
                DAEMON: ("sshd", 1, 50, 0)}, pressure={"cpu": (1_000_000, 0), "memory": (0, 0), "io": (0, 0)})
    before = proc_load.snapshot(10.0, str(root))
    busy = 150 + hog_ticks + 10
    total = int(seconds * TICKS_PER_S * 2)
    write_proc(root, [1000 + busy, 0, 200, 5000 + total - busy - 20 - 4, 10 + 20, 0, 0, 4],
               {OWN: ("python", 1, 600, 20), CHILD: ("fio (job)", OWN, 30, 0), HOG: ("stress", 1, 1000 + hog_ticks, 0),
                DAEMON: ("sshd", 1, 60, 0)}, **after)
    return before, proc_load.snapshot(10.0 + seconds, str(root))


def test_the_host_facts_over_a_case_subtract_this_process_and_its_children(tmp_path):
    before, after = two_snapshots(tmp_path, pressure={"cpu": (1_500_000, 0), "memory": (100_000, 20_000),
                                                      "io": (0, 0)}, mhz=[2400, 1200])
    host = proc_load.host_load(before, after, OWN, str(tmp_path))
    total = 2.0 * TICKS_PER_S * 2
    assert host["cpus"] == 2 and host["runnable"] == 5 and host["load_1m"] == 3.5
    assert host["others_cpu_fraction"] == pytest.approx((300 + 10) / total, abs=1e-4)  # kvbench's 150 jiffies are not others'
    assert host["steal_fraction"] == pytest.approx(4 / total, abs=1e-4)
    assert host["iowait_fraction"] == pytest.approx(20 / total, abs=1e-4)
    assert host["pressure"]["cpu_some"] == pytest.approx(0.25)  # 0.5 s of 2 s
    assert host["pressure"]["memory_some"] == pytest.approx(0.05) and host["pressure"]["memory_full"] == pytest.approx(0.01)
    assert host["busiest_others"][0] == {"pid": HOG, "name": "stress", "cpus": pytest.approx(300 / TICKS_PER_S / 2)}
    assert [p["pid"] for p in host["busiest_others"]] == [HOG, DAEMON]  # the child ("fio (job)") is kvbench's own
    assert host["cpu_mhz"] == {"mean": 1800, "min": 1200, "max": 3000}


def test_a_host_without_proc_files_gives_no_facts_and_no_error(tmp_path):
    before, after = proc_load.snapshot(0.0, str(tmp_path)), proc_load.snapshot(1.0, str(tmp_path))
    assert proc_load.host_load(before, after, OWN, str(tmp_path)) == {"seconds": 1.0}
    assert contention.contended({"seconds": 1.0}, {}) == []


def test_a_quiet_case_is_clean_and_a_hogged_one_says_who(tmp_path):
    quiet = proc_load.host_load(*two_snapshots(tmp_path, hog_ticks=0), OWN, str(tmp_path))
    assert contention.contended(quiet, {}) == []
    hogged = proc_load.host_load(*two_snapshots(tmp_path, hog_ticks=300), OWN, str(tmp_path))
    (why,) = contention.contended(hogged, {})
    assert why == "other processes used 78% of the CPUs (1.55 of 2): stress (1.50 CPU), sshd (0.05 CPU)"


@pytest.mark.parametrize("host,words", [
    ({"steal_fraction": 0.05}, "the hypervisor stole 5%"),
    ({"pressure": {"cpu_some": 0.4}}, "waiting for a CPU 40%"),
    ({"pressure": {"memory_some": 0.2}}, "stalled on memory 20%"),
])
def test_each_host_limit_makes_a_case_contended(host, words):
    (why,) = contention.contended(host, {})
    assert words in why


def test_recorded_only_facts_do_not_make_a_case_contended():
    """iowait and I/O pressure come from a storage case's own reads; load and runnable are an average and an instant."""
    host = {"iowait_fraction": 0.9, "pressure": {"io_some": 0.9, "io_full": 0.5}, "load_1m": 40.0, "runnable": 30}
    assert contention.contended(host, {}) == []


class FakeNvml:
    """pynvml's functions that nvml_watch calls, for two GPUs; each counter moves by what the test sets."""

    NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 1, 2, 0

    def __init__(self, reasons=0x4, others=(), xids=(), ecc_step=0, thermal_held_ns=0, unsupported=(), own=OWN):
        self.own, self.reads, self.reasons, self.others, self.xids = own, 0, reasons, list(others), list(xids)
        self.ecc_step, self.thermal_held_ns, self.unsupported = ecc_step, thermal_held_ns, set(unsupported)
        self.freed = False

    def __getattr__(self, name):
        raise AttributeError(name)

    def _maybe(self, name):
        if name in self.unsupported:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)

    def nvmlDeviceGetHandleByPciBusId(self, bus):
        return SimpleNamespace(bus=bus)

    def nvmlDeviceGetTotalEccErrors(self, h, kind, counter):
        self._maybe("ecc")
        self.reads += kind == 1
        return (self.reads - 1) * self.ecc_step if kind == 1 else 0

    def nvmlDeviceGetTotalEnergyConsumption(self, h):
        return 1_000_000 if self.reads <= 1 else 1_000_000 + 600_000  # 600 J over the case

    def nvmlDeviceGetViolationStatus(self, h, policy):
        self._maybe("violation")
        held = self.thermal_held_ns if (policy == 1 and self.reads > 1) else 0
        return SimpleNamespace(violationTime=held, referenceTime=0)

    def nvmlEventSetCreate(self):
        return "events"

    def nvmlDeviceRegisterEvents(self, h, kind, events):
        self._maybe("events")

    def nvmlEventSetWait_v2(self, events, timeout_ms):
        if not self.xids:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_TIMEOUT)
        return SimpleNamespace(device=SimpleNamespace(bus="0000:17:00.0"), eventData=self.xids.pop(0))

    def nvmlDeviceGetPciInfo(self, h):
        return SimpleNamespace(busId=h.bus.encode())

    def nvmlEventSetFree(self, events):
        self.freed = True

    def nvmlDeviceGetComputeRunningProcesses(self, h):
        return [SimpleNamespace(pid=self.own, usedGpuMemory=1 << 30), *self.others]

    def nvmlDeviceGetGraphicsRunningProcesses(self, h):
        return []

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, h):
        return self.reasons

    def nvmlDeviceGetClockInfo(self, h, which):
        return 1980 if which == 1 else 2619

    def nvmlDeviceGetMaxClockInfo(self, h, which):
        return 1980

    def nvmlDeviceGetTemperature(self, h, sensor):
        return 61

    def nvmlDeviceGetPowerUsage(self, h):
        self._maybe("power")
        return 312_500


def test_a_gpu_read_over_a_case_gives_clocks_reasons_power_and_what_changed():
    nvml = FakeNvml(reasons=0x4 | 0x1, others=[SimpleNamespace(pid=999, usedGpuMemory=2048)], xids=[79],
                    ecc_step=2, thermal_held_ns=200_000_000)
    watch = nvml_watch.start(nvml, ["0000:17:00.0"])
    gpu = nvml_watch.finish(watch, 2.0, {OWN})["0000:17:00.0"]
    assert gpu["sm_mhz"] == 1980 and gpu["memory_mhz"] == 2619 and gpu["temperature_c"] == 61
    assert gpu["throttle_reasons"] == ["gpu_idle", "sw_power_cap"] and gpu["power_w"] == 312.5
    assert gpu["other_processes"] == [{"pid": 999, "memory_bytes": 2048}]  # kvbench's own process is not another
    assert gpu["ecc_uncorrected_delta"] == 2 and gpu["ecc_corrected_delta"] == 0 and gpu["xids"] == [79]
    assert gpu["thermal_held_fraction"] == pytest.approx(0.1) and gpu["mean_power_w"] == 300.0
    assert nvml.freed
    assert contention.faults({"0000:17:00.0": gpu}) == ["GPU 0000:17:00.0: 2 uncorrected ECC error(s)",
                                                        "GPU 0000:17:00.0: XID 79"]
    reasons = contention.contended({}, {"0000:17:00.0": gpu})
    assert any("1 other process(es) on it (pid 999)" in r for r in reasons)
    assert any("held down for heat 10%" in r for r in reasons)
    assert not any("throttled" in r for r in reasons)  # the card's own power cap under load is recorded, not judged


def test_a_gpu_field_nvml_does_not_support_is_left_out():
    nvml = FakeNvml(reasons=0x40, unsupported={"ecc", "violation", "power", "events"})
    gpu = nvml_watch.finish(nvml_watch.start(nvml, ["0000:17:00.0"]), 1.0, {OWN})["0000:17:00.0"]
    assert "power_w" not in gpu and "ecc_uncorrected_delta" not in gpu and "thermal_held_fraction" not in gpu
    assert "xids" not in gpu and gpu["throttle_reasons"] == ["hw_thermal"]  # no event set: no count, not "none"
    assert contention.contended({}, {"0000:17:00.0": gpu}) == ["GPU 0000:17:00.0: clocks throttled (hw_thermal)"]


def test_watch_reads_the_named_gpus_and_records_even_when_the_case_raises(tmp_path, monkeypatch):
    nvml = FakeNvml(others=[SimpleNamespace(pid=4242, usedGpuMemory=None)], own=os.getpid())

    @contextmanager
    def session():
        yield nvml

    monkeypatch.setattr(contention, "nvml_session", session)
    write_proc(tmp_path, [100, 0, 0, 100, 0, 0, 0, 0], {})
    with pytest.raises(ValueError):
        with contention.watch(["0000:17:00.0"], root=str(tmp_path)) as seen:
            raise ValueError("the case broke")
    record = seen.record()
    assert record["gpus"]["0000:17:00.0"]["other_processes"] == [{"pid": 4242}]
    assert record["contended"] == ["GPU 0000:17:00.0: 1 other process(es) on it (pid 4242)"]
    assert record["host"]["cpus"] == 2


def test_watch_without_gpus_never_opens_nvml(tmp_path, monkeypatch):
    def refuse():
        raise AssertionError("NVML opened for a host-only case")

    monkeypatch.setattr(contention, "nvml_session", refuse)
    with contention.watch(root=str(tmp_path)) as seen:
        pass
    assert "gpus" not in seen.record() and seen.record()["contended"] == []


def test_the_gpus_a_case_watches_are_those_its_path_crosses():
    gpus = tuple(Gpu(index=i, name="H100", uuid=f"GPU-{i}", bus_id=f"0000:{i + 1:02x}:00.0", numa_node=0,
                     link=Link(5, 16, 5, 16), memory_bytes=None, bus_width_bits=None, max_memory_clock_mhz=None,
                     pci_device_id=None, cuda_index=i) for i in range(2))
    facts = HostFacts(hostname="h", cpu_model="x", sockets=1, cores=2, threads=2, kernel="6", numa=(), pci=(),
                      gpus=gpus, nics=(), nvme=(), dram=None, gpu_reason=None)
    assert contention.case_gpus([("dram_read",), ("gpu_link", 1)], facts) == ["0000:02:00.0"]
    assert contention.case_gpus([("dram_read",), ("all_gpu_links",)], facts) == ["0000:01:00.0", "0000:02:00.0"]
    assert contention.case_gpus([("dram_copy",)], facts) == []
    assert contention.case_gpus([("gpu_peer", 1, 0)], facts) == ["0000:02:00.0", "0000:01:00.0"]  # both ends


def test_a_kernel_thread_that_renames_itself_counts_its_delta_and_a_reused_pid_counts_whole(tmp_path):
    """kworkers name themselves after their current work item; a pid is reused by a process that started later."""
    write_proc(tmp_path, [0] * 8, {7: ("kworker/u8:3-events", 2, 1000, 0), 8: ("old", 1, 5000, 0)})
    before = proc_load.snapshot(0.0, str(tmp_path))
    write_proc(tmp_path, [0] * 8, {7: ("kworker/u8:3-writeback", 2, 1010, 0), 8: ("new", 1, 30, 0)})
    (tmp_path / "proc/8/stat").write_text((tmp_path / "proc/8/stat").read_text().replace(" 100 0 0", " 900 0 0"))
    after = proc_load.snapshot(1.0, str(tmp_path))
    host = proc_load.host_load(before, after, OWN, str(tmp_path))
    cpus = {p["pid"]: p["cpus"] for p in host["busiest_others"]}
    assert cpus == {7: pytest.approx(10 / TICKS_PER_S), 8: pytest.approx(30 / TICKS_PER_S)}
