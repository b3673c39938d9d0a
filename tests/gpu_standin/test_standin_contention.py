"""A GPU case on the stand-in records its GPU's contention facts through NVML, and a host-only case
opens no NVML at all: what the stand-in does not simulate (temperature, power; ECC and XIDs unless a
test asks for them) is left out."""

from kvbench.hardware import contention
from tests.gpu_standin.test_standin import run


def test_a_gpu_case_records_its_gpus_clocks_and_that_nothing_else_ran_on_it(standin):
    result = run("pcie.h2d", size="1MiB", memory="pinned")
    assert result.status == "ok", result.reason
    record = result.metadata["contention"]
    ((bus, gpu),) = record["gpus"].items()
    assert bus == standin.gpus[0].bus_id
    assert gpu["sm_mhz"] == 1980 and gpu["other_processes"] == [] and gpu["throttle_reasons"] == []
    assert "temperature_c" not in gpu and "ecc_uncorrected_delta" not in gpu and "xids" not in gpu
    assert not any(why.startswith("GPU") for why in record["contended"])


def test_a_host_case_reads_no_gpu(standin, monkeypatch):
    def refuse():
        raise AssertionError("NVML opened for a host-only case")

    monkeypatch.setattr(contention, "nvml_session", refuse)
    result = run("dram.copy", size="1MiB")
    assert result.status == "ok" and "gpus" not in result.metadata["contention"]
