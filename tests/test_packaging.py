"""An installed (non-editable) kvbench must carry its suites and kernels; a clone carries no database."""

import subprocess
import sys
import zipfile

import pytest

from tests.conftest import REPO


def test_wheel_ships_suites_and_peaks(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(tmp_path), str(REPO)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    (wheel,) = tmp_path.glob("kvbench-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "kvbench/_data/suites/quick.toml" in names
    assert "kvbench/hardware/peaks.toml" in names
    assert {"kvbench/cli/__init__.py", "kvbench/_data/kernels/hbm.cu", "kvbench/report/templates/report.html.j2"} <= names
    assert not any(n.startswith("tests/") for n in names)


def test_data_is_found_from_the_package():
    from kvbench.input_files import suites_dir

    assert (suites_dir() / "quick.toml").is_file()


def test_git_tracks_no_database_and_ignores_no_source_named_run():
    """A clone carries no database (an empty misc.sqlite was once tracked), and the ignore rules
    that keep stray databases out never hide a source path named `run` (`.ci/run`, a `run.py`)."""
    import shutil
    import subprocess

    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    tracked = subprocess.run(["git", "ls-files"], capture_output=True, text=True, cwd=REPO, check=True).stdout.split()
    assert not [p for p in tracked if p.endswith((".sqlite", ".sqlite-wal", ".sqlite-shm", ".db"))]
    probe = subprocess.run(["git", "check-ignore", "--no-index", "run", ".ci/run", "kvbench/run", "kvbench/cli/run.py",
                            "misc.sqlite"], capture_output=True, text=True, cwd=REPO)
    assert probe.stdout.split() == ["misc.sqlite"]


def test_the_test_extra_pulls_no_gpu_build():
    """Mooncake's wheel and the CUDA runtime it links are the test extra's only CUDA packages: both
    install on a CPU host; no GPU build of anything (a CUDA torch, cupy, a driver) comes with them."""
    import tomllib

    test = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["test"]
    names = {r.split(";")[0].split(">")[0].split("<")[0].split("=")[0].split("[")[0].strip().lower() for r in test}
    assert {"mooncake-transfer-engine", "nvidia-cuda-runtime-cu12"} <= names
    cuda = {n for n in names if n.startswith(("nvidia-", "cupy", "torch", "mooncake", "nixl"))}
    assert cuda == {"mooncake-transfer-engine", "nvidia-cuda-runtime-cu12"}, cuda
