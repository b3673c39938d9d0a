"""scripts/gpu-check, the one prepared call for a lent GPU host, exercised here: it must fail fast
and say why without CUDA, and (rehearsed, GPU cases skipped) leave exactly its files."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from kvbench.backends.cuda import cuda_unavailable_reason
from tests.conftest import REPO

FILES = {"gpu-check.log", "info.json", "smoke.json", "gpu-check.sqlite", "accept.xml", "report.md",
         "nvbandwidth.txt"}
MOST_FILES = 8  # what the device returns from $OUT
NO_CUDA = pytest.mark.skipif(cuda_unavailable_reason() is None, reason="a CUDA device is present: the real call is the test")


def outdir_counts(log: str) -> list[int]:
    """The files OUTDIR held as each step ended and while the suite ran, as the log says."""
    return [int(line.rsplit("(OUTDIR: ", 1)[1].split()[0]) for line in log.splitlines() if "(OUTDIR: " in line]


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


@pytest.mark.parametrize("args,message", [([], "OUTDIR is missing"), (["--stage"], "--stage needs smoke, full or tests"),
                                          (["--out", "x"], "unknown option '--out'")])
def test_a_missing_outdir_or_an_unknown_option_is_a_usage_error(tmp_path, args, message):
    proc = subprocess.run([str(REPO / "scripts" / "gpu-check"), *args], capture_output=True, text=True, timeout=60,
                          cwd=tmp_path)
    assert proc.returncode == 2 and message in proc.stderr and "usage:" in proc.stderr


def test_a_bad_stage_is_refused(tmp_path):
    proc = gpu_check(tmp_path / "out", "--stage", "medium")
    assert proc.returncode == 2 and "bad --stage 'medium'" in proc.stderr


@NO_CUDA
def test_a_rehearsal_leaves_exactly_its_files_with_the_run_read_back_from_the_database(tmp_path):
    out = tmp_path / "out"
    proc = gpu_check(out, "--stage", "smoke", env={"GPU_CHECK_REHEARSAL": "1"})
    log = (out / "gpu-check.log").read_text()
    assert proc.returncode == 0, log[-3000:]
    assert set(os.listdir(out)) == FILES  # at most 8 files, no folder: what the device call returns
    assert max(outdir_counts(log)) <= MOST_FILES
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".gpu-check-work")]  # the work folder is gone
    doc = json.loads((out / "smoke.json").read_text())
    assert doc["run"]["suite"] == "gpu-smoke" and doc["run"]["status"] == "complete"
    host = {"dram.copy", "kv.restore"}  # the host rules' cases run without a GPU; every GPU case skips
    assert {r["status"] for r in doc["results"] if r["bench"] not in host} == {"skipped"}
    assert {r["params"].get("strategy", "-") for r in doc["results"] if r["status"] != "skipped"} == {
        "-", "host", "contiguous"}
    with sqlite3.connect(out / "gpu-check.sqlite") as con:  # one file: the write-ahead log folded in
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    # one line as each case starts and as it ends, so a hang is located from the log
    assert "[1/16] start hbm.read" in log and "[16/16] kv.restore" in log
    # the plan before any step; each step's measured time at the end, what sizes the next call
    assert log.index("== plan (estimates, s): kvbench info") < log.index("kvbench info (budget")
    assert "== measured: suite gpu-smoke: " in log and "== times (measured, s): kvbench info" in log
    assert "== done: every step passed" in log


@NO_CUDA
def test_a_stage_whose_plan_is_over_the_call_s_limit_is_refused_before_it_starts(tmp_path):
    """Issue 55: a stage the device would cut at its command limit is refused, status 2, with only its log
    written and the way to narrow it named, rather than started and cut."""
    out = tmp_path / "out"
    proc = gpu_check(out, "--stage", "smoke", env={"GPU_CHECK_REHEARSAL": "1", "GPU_CHECK_CALL_S": "30"})
    assert proc.returncode == 2, proc.stdout[-3000:]
    assert "refusing to start: the stage's plan" in proc.stdout and "over GPU_CHECK_CALL_S=30 s" in proc.stdout
    assert "GPU_CHECK_SET=" in proc.stdout and "(budget" not in proc.stdout  # no step started
    assert set(os.listdir(out)) == {"gpu-check.log"}


@NO_CUDA
def test_a_call_stopped_during_the_suite_says_so_and_returns_its_database_in_at_most_8_files(tmp_path):
    """Issue 55, item 2: a call the device stops (SIGTERM to the whole command) names the step it was in,
    and OUTDIR holds the database as copied (one file, no -wal or -shm) beside the log."""
    out = tmp_path / "out"
    env = {**os.environ, "PYTHON": sys.executable, "GPU_CHECK_REHEARSAL": "1", "GPU_CHECK_COPY_S": "1"}
    proc = subprocess.Popen([str(REPO / "scripts" / "gpu-check"), "--stage", "smoke", str(out)], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:  # until the suite has started and its database was copied once
            log = (out / "gpu-check.log").read_text() if (out / "gpu-check.log").exists() else ""
            if "still in suite gpu-smoke" in log:
                break
            time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGTERM)  # as the device stops a command: every process of it
        proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    log = (out / "gpu-check.log").read_text()
    assert "still in suite gpu-smoke" in log, log[-2000:]
    assert "STOPPED by SIGTERM during suite gpu-smoke" in log, log[-2000:]
    files = set(os.listdir(out))
    assert len(files) <= MOST_FILES and "gpu-check.sqlite" in files
    assert not any(name.endswith(("-wal", "-shm", "-journal")) for name in files)
    with sqlite3.connect(out / "gpu-check.sqlite") as con:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        assert con.execute("SELECT count(*) FROM run").fetchone()[0] == 1


@NO_CUDA
def test_the_tests_stage_rehearsed_leaves_its_log_info_and_the_tests_xml(tmp_path):
    out = tmp_path / "out"
    proc = gpu_check(out, "--stage", "tests", env={"GPU_CHECK_REHEARSAL": "1"})
    log = (out / "gpu-check.log").read_text()
    assert proc.returncode == 0, log[-3000:]
    assert set(os.listdir(out)) == {"gpu-check.log", "info.json", "gpu-tests.xml"}
    assert "== plan: GPU tests: " in log and "== measured: GPU tests: " in log


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
