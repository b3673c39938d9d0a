"""The storage and network crosschecks: peer output parsed, and real runs where the tools exist."""

import shutil

import pytest

from kvbench.crosscheck.net import _FINAL, ucx_perftest_put
from kvbench.crosscheck.storage import fio_read

FINAL = "Final:                  2000     17.956    18.045    18.045    55415.71   55415.71       55416       55416\n"


def test_ucx_perftest_final_line_is_parsed():
    match = _FINAL.search(FINAL)
    assert float(match.group(5)) == pytest.approx(55415.71)  # overall bandwidth, MB/s of 2**20 bytes


@pytest.mark.skipif(shutil.which("ucx_perftest") is None, reason="ucx_perftest is not installed (Debian ucx-utils)")
def test_ucx_perftest_runs_on_loopback():
    figure = ucx_perftest_put(64 << 10, 500, {})
    assert figure.gbps and figure.gbps > 0


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed (Debian fio)")
def test_fio_reads_with_o_direct(tmp_path):
    figure = fio_read(str(tmp_path), 8 << 20, 1 << 20, 4, "libaio", seconds=1)
    assert figure.gbps and figure.gbps > 0 and "O_DIRECT" in figure.note
    assert list(tmp_path.iterdir()) == []


def test_nvbandwidth_gpu0_is_read_from_its_matrix_not_its_sum():
    from kvbench.crosscheck.pcie import gpu0_gbps

    out = """Running host_to_device_memcpy_ce.
memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)
           0         1         2
 0     55.65     55.62     27.10

SUM host_to_device_memcpy_ce 138.37
"""
    assert gpu0_gbps(out) == 55.65
    assert gpu0_gbps(out.replace("55.65", "N/A")) is None
    assert gpu0_gbps("ERROR: no CUDA device\n") is None


def test_the_pcie_crosscheck_pairs_each_direction_and_both_with_nvbandwidth_s_tests(monkeypatch):
    from kvbench.backends.cuda import cuda_unavailable_reason
    from kvbench.crosscheck.pcie import crosscheck_pcie

    if not cuda_unavailable_reason():
        pytest.skip("a GPU answers here: scripts/gpu-check runs the real crosscheck")
    monkeypatch.setenv("PATH", "/nonexistent")  # no nvbandwidth either
    pairs = crosscheck_pcie()
    assert [(ours.name, peer.name) for ours, (peer,) in pairs] == [
        ("kvbench pcie.h2d", "nvbandwidth host_to_device_memcpy_ce"),
        ("kvbench pcie.d2h", "nvbandwidth device_to_host_memcpy_ce"),
        ("kvbench pcie.bidir h2d", "nvbandwidth host_to_device_bidirectional_memcpy_ce"),
        ("kvbench pcie.bidir d2h", "nvbandwidth device_to_host_bidirectional_memcpy_ce")]
    assert all(ours.gbps is None and "no CUDA device" in ours.note for ours, _ in pairs)  # skipped, never made up
    assert all(peer.gbps is None and "no nvbandwidth binary" in peer.note for _, (peer,) in pairs)


@pytest.fixture
def hung_tools(tmp_path, monkeypatch):
    """Every peer tool on PATH is one that never finishes (a tool stuck on a dead device or peer)."""
    tools = tmp_path / "bin"
    tools.mkdir()
    for name in ("nvbandwidth", "mbw", "fio", "ucx_perftest"):
        (tools / name).write_text("#!/bin/sh\nexec sleep 600\n")
        (tools / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}:/usr/bin:/bin")
    return tmp_path


def test_a_peer_tool_that_never_finishes_gives_no_figure_and_says_so(hung_tools, monkeypatch):
    """A hung tool is killed at its bound and its figure says so in one line, instead of a traceback
    (subprocess.TimeoutExpired) ending the crosscheck."""
    import kvbench.crosscheck.dram as dram
    import kvbench.crosscheck.net as net
    import kvbench.crosscheck.pcie as pcie
    import kvbench.crosscheck.storage as storage

    for module, name in ((pcie, "NVBANDWIDTH_TIMEOUT_S"), (dram, "MBW_TIMEOUT_S"), (storage, "FIO_GRACE_S"),
                         (net, "PERFTEST_TIMEOUT_S")):
        monkeypatch.setattr(module, name, 1)
    work = hung_tools / "files"
    work.mkdir()
    figures = [pcie.nvbandwidth("host_to_device_memcpy_ce"), *dram.mbw(1 << 20, 1),
               storage.fio_read(str(work), 8 << 20, 1 << 20, 4, seconds=1), net.ucx_perftest_put(64 << 10, 10, {})]
    for figure, tool, bound in zip(figures, ("nvbandwidth", "mbw", "mbw", "fio", "ucx_perftest"), (1, 1, 1, 2, 1),
                                   strict=True):
        assert figure.gbps is None
        assert figure.note == f"failed: {tool} did not finish within {bound} s (killed)"
    assert list(work.iterdir()) == []  # fio's file is removed all the same
