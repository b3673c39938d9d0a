"""Files named by what they hold, and help that reads as written."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import FIXTURES, REPO

QUICK = str(FIXTURES / "runs" / "quick-cpu-vm.json")


def _kvbench(*args: str, cwd, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kvbench", *args], capture_output=True, text=True, timeout=300,
                          cwd=cwd, env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})


def test_report_without_output_names_its_file_by_format(tmp_path):
    proc = _kvbench("report", QUICK, "--format", "markdown", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.md"]
    assert (tmp_path / "report.md").read_text().startswith("# ")
    proc = _kvbench("report", QUICK, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "report.html").read_text().lstrip().lower().startswith("<!doctype html")


def test_help_shows_no_type_for_flags_and_names_what_options_take(tmp_path):
    for args in (["run", "--help"], ["accept", "--help"], ["compare", "--help"], ["info", "--help"]):
        proc = _kvbench(*args, cwd=tmp_path, env={"COLUMNS": "100"})
        assert proc.returncode == 0, proc.stderr
        assert "<bool>" not in proc.stdout, args
        assert "FILE|-" in proc.stdout, args
    assert "URL" in _kvbench("run", "--help", cwd=tmp_path, env={"COLUMNS": "100"}).stdout
