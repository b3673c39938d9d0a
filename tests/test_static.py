"""Static checks of code that CI cannot run: the GPU paths execute only on a GPU host, so an
undefined name or a missing import there must be caught by reading the code."""

import shutil
import subprocess
import sys

import pytest

from tests.conftest import REPO


@pytest.mark.skipif(shutil.which("ruff") is None and not (REPO / ".venv/bin/ruff").exists(),
                    reason="ruff is not installed (the test extra has it)")
def test_no_undefined_name_unused_import_or_syntax_error_anywhere():
    ruff = shutil.which("ruff") or str(REPO / ".venv/bin/ruff")
    proc = subprocess.run([ruff, "check", "--select", "F,E9", "--output-format", "concise", "kvbench", "tests",
                           "benchmarks"], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_package_imports_without_a_gpu():
    proc = subprocess.run([sys.executable, "-c", "import kvbench.benches as b, kvbench.executors as e; "
                           "b.all_benches(); e.all_executors()"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
