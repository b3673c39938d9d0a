"""`make test` runs the suite under pytest-xdist with `--dist loadgroup`, and the expensive fixtures (a
gpu-check stage on the stand-in: minutes each) are made once only because the tests sharing them run on
one worker (tests/conftest.py). If the grouping stops holding, nothing fails: each worker quietly makes
the stage again (pytest 9.2 with pytest-xdist 3.8 did: four gpu-check full stages in one CI run,
pytest-dev/pytest-xdist#1386). This test is that failure made visible."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

GROUPED = '''
import os
import pytest

@pytest.fixture(scope="module")
def stage():
    with open(os.environ["GROUP_LOG"], "a") as log:
        log.write("made " + os.environ["PYTEST_XDIST_WORKER"] + "\\n")

@pytest.mark.xdist_group("one-stage")
@pytest.mark.parametrize("n", range(6))
def test_uses_the_stage(stage, n):
    pass

def test_free_a(): pass
def test_free_b(): pass
'''


def test_tests_of_one_xdist_group_share_one_worker_and_one_fixture(tmp_path):
    (tmp_path / "test_grouped.py").write_text(GROUPED)
    log = tmp_path / "made.log"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "3",
                           "--dist", "loadgroup", "--rootdir", str(tmp_path), "-c", "/dev/null", str(tmp_path)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "GROUP_LOG": str(log)})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "8 passed" in proc.stdout
    made = log.read_text().splitlines()
    assert len(made) == 1, f"the module fixture was made {len(made)} times ({made}): the xdist_group did not hold"
