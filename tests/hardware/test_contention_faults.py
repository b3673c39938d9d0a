"""NVML faults are seen, not swallowed (issue 55, item 5): around a case, a reading that fails the way NVML
readings fail (its own NVMLError, an OS error) is recorded as failed in the case's contention record; a
programming error (a wrong argument list: TypeError) raises, so the case fails instead of being stored
`ok` with no GPU reading. And the facts a one-GPU VM gives: the number of active NVLinks (0 is a fact)
and XID events NVML refused. The GPUs here are a fake NVML module (tests/hardware/test_contention.py)."""

import os
from contextlib import contextmanager
from types import SimpleNamespace

import pynvml
import pytest

from kvbench.hardware import contention, nvml_watch
from tests.hardware.fake_proc import write_proc
from tests.hardware.test_contention import OWN, FakeNvml

BUS = "0000:17:00.0"


class WrongArguments(FakeNvml):
    """An NVML call given a wrong argument list, as a signature change or a typo makes it."""

    def nvmlDeviceGetTotalEccErrors(self, h, kind):  # kvbench passes three arguments: TypeError
        return 0


class LibraryGone(FakeNvml):
    """The driver's library failing under the watch: an OS error, as a reading can fail."""

    def nvmlDeviceGetHandleByPciBusId(self, bus):
        raise OSError(5, "Input/output error")


class WithLinks(FakeNvml):
    """NVML's NVLink calls: `active` links enabled of 18, each error counter at zero."""

    NVML_NVLINK_MAX_LINKS = 18

    def __init__(self, active=0, **kwargs):
        super().__init__(**kwargs)
        self.active = active

    def nvmlDeviceGetNvLinkState(self, h, link):
        if not self.active:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)  # a GPU without NVLink
        return 1 if link < self.active else 0

    def nvmlDeviceGetNvLinkErrorCounter(self, h, link, counter):
        return 0


def watched(monkeypatch, tmp_path, nvml):
    @contextmanager
    def session():
        yield nvml

    monkeypatch.setattr(contention, "nvml_session", session)
    write_proc(tmp_path, [100, 0, 0, 100, 0, 0, 0, 0], {})
    return contention.watch([BUS], root=str(tmp_path))


def test_a_wrong_nvml_argument_list_raises_out_of_the_watch(monkeypatch, tmp_path):
    with pytest.raises(TypeError), watched(monkeypatch, tmp_path, WrongArguments(own=os.getpid())):
        pass


def test_an_nvml_type_error_fails_the_case_instead_of_storing_it_ok(monkeypatch):
    """Through the runner, on the CUDA stand-in: the case is `failed`, naming the TypeError."""
    from kvbench.benches import get_bench
    from kvbench.measure import Settings
    from kvbench.plan.cases import Case
    from kvbench.run.runner import run_case
    from kvbench.run.this_host import host_facts
    from tests.gpu_standin.fixture import installed

    with installed(gpus=1) as machine:
        import pynvml as standin_nvml  # the stand-in's, while it is installed

        machine.health = {}  # health counters answered: the watch calls nvmlDeviceGetTotalEccErrors
        monkeypatch.setattr(standin_nvml, "nvmlDeviceGetTotalEccErrors", lambda handle: 0, raising=True)
        params = get_bench("pcie.h2d").canonical_params({"size": 1 << 20, "memory": "pinned"})
        result = run_case(Case("pcie.h2d", params), host_facts(), Settings(samples=5, min_sample_s=0.002,
                                                                            warmup_s=0.005))
    assert result.status == "failed" and "TypeError" in result.reason, (result.status, result.reason)


def test_a_reading_that_fails_is_recorded_as_failed_in_the_case(monkeypatch, tmp_path):
    with watched(monkeypatch, tmp_path, LibraryGone(own=os.getpid())) as seen:
        pass
    record = seen.record()
    assert "gpus" not in record
    assert record["reading_failed"] == ["GPUs at the start: OSError: [Errno 5] Input/output error"]


def test_the_active_nvlinks_are_a_fact_and_zero_is_one():
    none = nvml_watch.finish(nvml_watch.start(WithLinks(active=0), [BUS]), 1.0, {OWN})[BUS]
    assert none["nvlink_active"] == 0 and "nvlink_crc_flit_delta" not in none
    some = nvml_watch.finish(nvml_watch.start(WithLinks(active=18), [BUS]), 1.0, {OWN})[BUS]
    assert some["nvlink_active"] == 18 and some["nvlink_crc_flit_delta"] == 0


def test_xid_events_nvml_refuses_are_recorded_as_refused_not_as_none_seen():
    gpu = nvml_watch.finish(nvml_watch.start(FakeNvml(unsupported={"events"}), [BUS]), 1.0, {OWN})[BUS]
    assert gpu["xid_events"] is False and "xids" not in gpu
    delivered = nvml_watch.finish(nvml_watch.start(FakeNvml(), [BUS]), 1.0, {OWN})[BUS]
    assert delivered["xids"] == [] and "xid_events" not in delivered


def test_an_event_wait_that_breaks_with_a_type_error_is_not_taken_for_no_more_events():
    class BadWait(FakeNvml):
        def nvmlEventSetWait_v2(self, events):  # one argument short
            return SimpleNamespace()

    with pytest.raises(TypeError):
        nvml_watch.finish(nvml_watch.start(BadWait(), [BUS]), 1.0, {OWN})
