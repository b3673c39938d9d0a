"""storage.read / storage.write through NIXL's POSIX backend, small and verified."""

import glob
import os
import signal
import subprocess
import sys
import time

import pytest

from kvbench.backends.nixl import backend_unavailable_reason
from kvbench.benches import get_bench
from kvbench.errors import BadInput
from kvbench.measure import Settings
from kvbench.memory.files import check_directory
from kvbench.plan.cases import Case, plan
from kvbench.plan.suite import BenchSweep
from kvbench.run.runner import run_case
from tests.conftest import REPO

pytestmark = pytest.mark.skipif(backend_unavailable_reason("POSIX") is not None,
                                reason=f"{backend_unavailable_reason('POSIX')}")
FAST = Settings(samples=5, min_sample_s=0.002, warmup_s=0)
SMALL = {"file_size": "4MiB", "io_size": "64KiB", "batch": 8}


def case(bench, tmp_path, **params):
    spec = get_bench(bench)
    return Case(bench, spec.canonical_params({**SMALL, "path": str(tmp_path), **params}))


@pytest.mark.parametrize("bench", ["storage.read", "storage.write"])
@pytest.mark.parametrize("params", [{}, {"pattern": "random"}, {"api": "aio"}, {"files": 2, "target": "numa:0"}])
def test_posix_transfers_are_verified_and_cleaned_up(facts, tmp_path, bench, params):
    result = run_case(case(bench, tmp_path, **params), facts, FAST)
    assert result.status == "ok", result.reason
    assert result.measurement.verified and result.measurement.bytes_per_op == 8 * 65536
    assert result.metadata["nixl_backend"] == "POSIX" and result.metadata["iops"] > 0
    assert result.metadata["filesystem"]["mount"] and result.metadata["direct"] in (True, False)
    assert os.listdir(tmp_path) == []  # the test files are gone


def test_a_filesystem_without_o_direct_is_labelled_page_cache(facts):
    if not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm")
    result = run_case(Case("storage.read", get_bench("storage.read").canonical_params({**SMALL, "path": "/dev/shm"})),
                      facts, FAST)
    if result.metadata.get("direct"):
        pytest.skip("/dev/shm accepted O_DIRECT here")
    assert result.metadata["page_cache"] is True
    assert any("page cache" in w for w in result.warnings)


def test_gds_without_cuda_is_skipped_with_the_reason(facts, tmp_path):
    result = run_case(case("storage.read", tmp_path, backend="gds"), facts, FAST)
    if result.status == "ok":
        pytest.skip("GDS works on this host")
    assert result.status == "skipped" and "GDS" in result.reason


@pytest.mark.parametrize("params,message", [
    ({"file_size": "1TiB", "io_size": "1MiB"}, "more than 90% of"),
    ({"path": "/no/such/dir"}, "not a directory"),
    ({"io_size": "48KiB"}, "not a multiple"),
    ({"batch": 1000}, "the files hold only 64 I/Os"),
])
def test_bad_storage_input_before_writing(tmp_path, params, message):
    with pytest.raises(BadInput, match=message):
        plan([BenchSweep(id="storage.read", params={**SMALL, "path": str(tmp_path), **params})])


def test_unwritable_directory_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    with pytest.raises(BadInput, match="not writable"):
        check_directory(str(tmp_path), 1)


def test_interrupted_run_leaves_no_files(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-m", "kvbench", "run", "--bench", "storage.read", "--set", f"path={tmp_path}",
         "--set", "file_size=512MiB", "--set", "io_size=1MiB", "--db", f"sqlite:///{tmp_path / 'db' / 'k.sqlite'}"],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not glob.glob(str(tmp_path / "kvbench-*.dat")):
        time.sleep(0.05)
    assert glob.glob(str(tmp_path / "kvbench-*.dat")), "the benchmark never created its file"
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=120)
    assert glob.glob(str(tmp_path / "kvbench-*.dat")) == []


def test_gds_compat_mode_is_read_from_cufile_json(tmp_path, monkeypatch):
    from kvbench.benches.storage import gds_compat_mode

    config = tmp_path / "cufile.json"
    config.write_text('{\n  // comments are allowed in cufile.json\n  "properties": { "allow_compat_mode": true }\n}\n')
    monkeypatch.setenv("CUFILE_ENV_PATH_JSON", str(config))
    assert gds_compat_mode() is True
    config.write_text('{ "properties": { "allow_compat_mode": false } }')
    assert gds_compat_mode() is False
    monkeypatch.setenv("CUFILE_ENV_PATH_JSON", str(tmp_path / "missing.json"))
    assert gds_compat_mode() is None


def test_posix_into_gpu_memory_is_skipped_with_the_reason(facts, tmp_path):
    result = run_case(case("storage.read", tmp_path, target="device"), facts, FAST)
    assert result.status == "skipped"


def test_refused_o_direct_falls_back_and_says_page_cache(facts, tmp_path, monkeypatch):
    """What tmpfs does on most kernels, forced here: O_DIRECT refused, the result labelled."""
    real_open = os.open

    def no_direct(path, flags, *args):
        if flags & os.O_DIRECT:
            raise OSError(22, "Invalid argument")
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", no_direct)
    result = run_case(case("storage.read", tmp_path), facts, FAST)
    assert result.status == "ok", result.reason
    assert result.metadata["page_cache"] is True and result.metadata["direct"] is False
    assert any("page cache" in w for w in result.warnings)


def test_gds_libraries_are_found_where_pip_puts_them(tmp_path):
    from kvbench.backends.nixl import find_library

    lib = tmp_path / "site" / "nvidia" / "cu13" / "lib"
    lib.mkdir(parents=True)
    (lib / "libcufile.so.0").write_bytes(b"")
    assert find_library("libcufile.so.0", [str(tmp_path / "site")]) == str(lib / "libcufile.so.0")
    assert find_library("libcufile.so.0", [str(tmp_path / "elsewhere")]) is None
