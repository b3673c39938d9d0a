"""Every kernel compiles with nvcc for sm_80, sm_90 and sm_100 without register spills, and with
NVRTC exactly as kvbench compiles it at run time."""

import re
import shutil
import subprocess

import pytest

from kvbench.input_files import kernels_dir

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


def _nvrtc():
    try:
        from cupy.cuda import nvrtc

        nvrtc.getVersion()
    except Exception as exc:  # cupy absent, or no libnvrtc for it to load
        pytest.skip(f"NVRTC is not usable here: {type(exc).__name__}: {exc}")
    return nvrtc


@pytest.mark.parametrize("arch", ["compute_80", "compute_90", "compute_100"])
@pytest.mark.parametrize("source", KERNELS, ids=lambda p: p.name)
def test_kernel_compiles_with_nvrtc_as_kvbench_loads_it(source, arch):
    """The run-time path: cupy's RawModule hands the source to NVRTC, which has no host headers
    and its own defaults, with kvbench's options and the ones cupy adds. nvcc passing is not
    enough; this needs no GPU."""
    from kvbench.backends.cuda import KERNEL_OPTIONS

    nvrtc = _nvrtc()
    program = nvrtc.createProgram(source.read_text(), source.name, [], [])
    try:
        try:
            nvrtc.compileProgram(program, [*KERNEL_OPTIONS, f"-arch={arch}", "--device-as-default-execution-space",
                                           "-ftz=true"])
        except nvrtc.NVRTCError as exc:
            pytest.fail(f"{source.name} for {arch}: {exc}\n{nvrtc.getProgramLog(program)}")
        ptx = nvrtc.getPTX(program).decode()
    finally:
        nvrtc.destroyProgram(program)
    names = re.findall(r'extern "C" __global__ void (\w+)', source.read_text())
    assert names and all(f".entry {name}(" in ptx for name in names), names
