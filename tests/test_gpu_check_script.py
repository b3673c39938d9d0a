"""scripts/gpu-check, the one prepared call for a lent GPU host, exercised here: it must fail fast
and say why without CUDA, and (rehearsed, GPU cases skipped) leave exactly its files."""

import json
import os
import sqlite3
import subprocess
import sys

import pytest

from kvbench.backends.cuda import cuda_unavailable_reason
from tests.conftest import REPO

FILES = {"gpu-check.log", "info.json", "smoke.json", "gpu-check.sqlite", "accept.xml", "report.md",
         "nvbandwidth.txt", "gpu-tests.xml"}


def gpu_check(out, *args, env=None, timeout=300):
    return subprocess.run([str(REPO / "scripts" / "gpu-check"), *args, str(out)], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYTHON": sys.executable, **(env or {})})


@pytest.mark.skipif(cuda_unavailable_reason() is None, reason="a CUDA device is present")
def test_without_cuda_it_stops_before_its_first_step_non_zero_and_says_why(tmp_path):
    """Its promise, to stop within a minute without a usable GPU, is kept by stopping before any step
    (a test times nothing: a busy box could make any bound red): only its log is written."""
    proc = gpu_check(tmp_path / "out", "--stage", "smoke")
    assert proc.returncode == 3, proc.stdout
    assert "cannot measure here, stopping: no CUDA device" in proc.stdout
    assert set(os.listdir(tmp_path / "out")) == {"gpu-check.log"}


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["--stage", "full", "--help"]])
def test_help_prints_the_usage_and_makes_no_folder(tmp_path, args):
    proc = subprocess.run([str(REPO / "scripts" / "gpu-check"), *args], capture_output=True, text=True, timeout=60,
                          cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith("usage: scripts/gpu-check"), proc.stdout + proc.stderr
    assert not (REPO / "--help").exists() and not (REPO / "-h").exists() and not list(tmp_path.iterdir())


@pytest.mark.parametrize("args,message", [([], "OUTDIR is missing"), (["--stage"], "--stage needs smoke or full"),
                                          (["--out", "x"], "unknown option '--out'")])
def test_a_missing_outdir_or_an_unknown_option_is_a_usage_error(tmp_path, args, message):
    proc = subprocess.run([str(REPO / "scripts" / "gpu-check"), *args], capture_output=True, text=True, timeout=60,
                          cwd=tmp_path)
    assert proc.returncode == 2 and message in proc.stderr and "usage:" in proc.stderr


def test_a_bad_stage_is_refused(tmp_path):
    proc = gpu_check(tmp_path / "out", "--stage", "medium")
    assert proc.returncode == 2 and "bad --stage 'medium'" in proc.stderr


@pytest.mark.skipif(cuda_unavailable_reason() is None, reason="a CUDA device is present: the real call is the test")
def test_a_rehearsal_leaves_exactly_its_files_with_the_run_read_back_from_the_database(tmp_path):
    out = tmp_path / "out"
    proc = gpu_check(out, "--stage", "smoke", env={"GPU_CHECK_REHEARSAL": "1"})
    log = (out / "gpu-check.log").read_text()
    assert proc.returncode == 0, log[-3000:]
    assert set(os.listdir(out)) == FILES  # at most 8 files, no folder: what the device call returns
    doc = json.loads((out / "smoke.json").read_text())
    assert doc["run"]["suite"] == "gpu-smoke" and doc["run"]["status"] == "complete"
    assert {r["status"] for r in doc["results"]} == {"skipped"}
    with sqlite3.connect(out / "gpu-check.sqlite") as con:  # one file: the write-ahead log folded in
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    # one line as each case starts and as it ends, so a hang is located from the log
    assert "[1/13] start hbm.read" in log and "[13/13] kv.handoff" in log
    assert "== done: every step passed" in log


def test_a_hung_nvidia_smi_stops_it_non_zero_and_says_why(tmp_path):
    """nvidia-smi hangs on a GPU or driver that stopped answering: the check is bounded and says so,
    instead of waiting for ever before its first step."""
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "nvidia-smi").write_text("#!/bin/sh\nexec sleep 600\n")
    (tools / "nvidia-smi").chmod(0o755)
    # the bound is the scripts' (30 s unless KVBENCH_SMI_TIMEOUT_S says otherwise): 2 s here, so the
    # test waits 2 s per script instead of 30 for the same behaviour
    hung = {"PATH": f"{tools}:{os.environ['PATH']}", "KVBENCH_SMI_TIMEOUT_S": "2"}
    proc = gpu_check(tmp_path / "out", "--stage", "smoke", env=hung)
    assert proc.returncode == 3, proc.stdout
    assert "cannot measure here, stopping: nvidia-smi did not answer within 2 s" in proc.stdout
    extra = subprocess.run([str(REPO / "scripts" / "cuda-extra")], capture_output=True, text=True, timeout=300,
                           env={**os.environ, **hung})
    assert extra.returncode == 0 and extra.stdout == ""  # no extra: setup goes on without CUDA's
