"""Every kernel compiles with nvcc for sm_80, sm_90 and sm_100 without register spills."""

import re
import shutil
import subprocess

import pytest

from kvbench.resources import kernels_dir

KERNELS = sorted(kernels_dir().glob("*.cu"))


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed here")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90", "sm_100"])
@pytest.mark.parametrize("source", KERNELS, ids=lambda p: p.name)
def test_kernel_compiles_without_spills(tmp_path, source, arch):
    proc = subprocess.run(["nvcc", "-cubin", f"-arch={arch}", "-Xptxas", "-v", "-o", str(tmp_path / "k.cubin"),
                           str(source)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    spills = [int(n) for n in re.findall(r"(\d+) bytes spill (?:stores|loads)", proc.stderr)]
    assert spills and all(n == 0 for n in spills), proc.stderr


def test_the_kernels_are_there():
    assert {p.name for p in KERNELS} >= {"hbm.cu", "spin.cu", "kv_gather.cu"}
