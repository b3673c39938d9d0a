"""`kvbench crosscheck pcie --nvbandwidth-output FILE` (issue 55): scripts/gpu-check runs nvbandwidth once, as
a step, and the crosscheck reads that output instead of running the tool again. The output below has
nvbandwidth's layout (v0.7); its figures are made up for the test, not measured."""

import subprocess
import sys

from kvbench.crosscheck.pcie import BIDIR_TESTS, TESTS, nvbandwidth, sections

OUTPUT = """nvbandwidth Version: v0.7
Built from Git version: v0.7

NOTE: This tool reports current measured bandwidth on your system.
Additional system-specific tuning may be required to achieve maximal peak bandwidth.

CUDA Runtime Version: 13000
CUDA Driver Version: 13000
Driver Version: 580.159.04

Device 0: NVIDIA H100 80GB HBM3 (00000000:17:00)

Running host_to_device_memcpy_ce.
memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)
           0
 0     11.11

SUM host_to_device_memcpy_ce 11.11

Running device_to_host_memcpy_ce.
memcpy CE CPU(row) <- GPU(column) bandwidth (GB/s)
           0
 0     22.22

SUM device_to_host_memcpy_ce 22.22

Running host_to_device_bidirectional_memcpy_ce.
memcpy CE CPU(row) <-> GPU(column) bandwidth (GB/s)
           0
 0     33.33

SUM host_to_device_bidirectional_memcpy_ce 33.33
"""


def test_each_test_s_figure_is_read_from_its_own_section():
    parts = sections(OUTPUT)
    assert set(parts) == {TESTS["pcie.h2d"], TESTS["pcie.d2h"], BIDIR_TESTS["h2d"]}
    got = {test: nvbandwidth(test, ("nvbandwidth.txt", OUTPUT)).gbps
           for test in (TESTS["pcie.h2d"], TESTS["pcie.d2h"], BIDIR_TESTS["h2d"])}
    assert got == {TESTS["pcie.h2d"]: 11.11, TESTS["pcie.d2h"]: 22.22, BIDIR_TESTS["h2d"]: 33.33}
    figure = nvbandwidth(TESTS["pcie.h2d"], ("nvbandwidth.txt", OUTPUT))
    assert "from nvbandwidth.txt" in figure.note


def test_a_test_missing_from_the_output_is_named_and_nothing_is_run(monkeypatch):
    monkeypatch.setattr("shutil.which", lambda name: (_ for _ in ()).throw(AssertionError("nvbandwidth was run")))
    figure = nvbandwidth(BIDIR_TESTS["d2h"], ("nvbandwidth.txt", OUTPUT))
    assert figure.gbps is None and f"not in nvbandwidth.txt: no GPU 0 figure for {BIDIR_TESTS['d2h']}" in figure.note


def test_an_unreadable_output_file_is_refused_in_one_line(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "kvbench", "crosscheck", "pcie", "--nvbandwidth-output",
                           str(tmp_path / "missing.txt")], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2 and "--nvbandwidth-output" in proc.stderr and "missing.txt" in proc.stderr
