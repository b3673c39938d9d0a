"""An installed (non-editable) kvbench must carry its suites and kernels."""

import subprocess
import sys
import zipfile

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
    from kvbench.resources import suites_dir

    assert (suites_dir() / "quick.toml").is_file()
