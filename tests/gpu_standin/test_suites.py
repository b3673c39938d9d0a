"""Both GPU suites run through the CUDA stand-in, in a subprocess as a user runs them, into this
test's temporary database: every benchmark reaches a verified `ok` (GDS and VRAM over UCX skip: the
stand-in hides NIXL, which cannot use its memory), and every command that reads GPU rows runs on them.
Sizes are scaled down with `--set` (numpy is the GPU here); no number leaves the temporary folder."""

import json
import subprocess
import sys

import pytest

from tests.conftest import REPO
from tests.gpu_standin import SITE, subprocess_env

TINY_MODEL = SITE.parent / "data" / "tiny-model.json"
# every size the two suites name, scaled for numpy; the sweeps' shapes (which params vary) stay
SCALE = {"smoke": ["size=1MiB", "tokens=256", f"model={TINY_MODEL}"]}
SCALE["full"] = [*SCALE["smoke"], "m=128", "n=64", "k=32", "file_size=32MiB"]
NIXL_BENCHES = {"storage.read", "storage.write", "net.read", "net.write"}


def kvbench(*args, env, timeout=900):
    return subprocess.run([sys.executable, "-m", "kvbench", *args], check=False, capture_output=True, text=True,
                          cwd=REPO, env=env, timeout=timeout)


def suite_ids(stage: str) -> set[str]:
    import tomllib

    return {b["id"] for b in tomllib.loads((REPO / "suites" / f"gpu-{stage}.toml").read_text())["bench"]}


@pytest.fixture(scope="module", params=["smoke", "full"])
def stage_run(request, tmp_path_factory):
    stage = request.param
    folder = tmp_path_factory.mktemp(f"standin-{stage}")
    env = subprocess_env(gpus=2 if stage == "full" else 1)  # full has gpus=all
    db = f"sqlite:///{folder / 'gpu.sqlite'}"
    sets = [arg for item in SCALE[stage] for arg in ("--set", item)]
    proc = kvbench("run", "--suite", f"gpu-{stage}", "--db", db, *sets, "--json", str(folder / "run.json"), env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    doc = json.loads((folder / "run.json").read_text())
    # a second, shorter run of the same suite: what compare needs
    again = kvbench("run", "--suite", f"gpu-{stage}", "--bench", "pcie.h2d", "--bench", "pcie.d2h", "--db", db,
                    "--set", "size=1MiB", env=env)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    return stage, db, env, doc, folder


def test_every_gpu_benchmark_of_the_suite_runs_to_a_verified_ok(stage_run):
    stage, _db, _env, doc, _folder = stage_run
    results = doc["results"]
    not_ok = [(r["bench"], r["params"], r["reason"]) for r in results
              if r["status"] != "ok" and not (r["bench"] in NIXL_BENCHES and r["status"] == "skipped")]
    assert not not_ok
    assert all(r["verified"] for r in results if r["status"] == "ok")
    ok = {r["bench"] for r in results if r["status"] == "ok"}
    assert ok == suite_ids(stage) - NIXL_BENCHES


@pytest.mark.parametrize("command", [
    ["report", "1", "--format", "markdown", "-o", "{folder}/report.md"],
    ["report", "1", "latest", "-o", "{folder}/report.html"],
    ["accept", "--run", "1", "--junit", "{folder}/accept.xml"],
    ["plan", "--model", "Llama-3.1-70B", "--tokens", "4096"],
    ["policy", "--json", "-"],
    ["compare", "1", "latest"],
    ["export", "1", "--format", "github-action-benchmark"],
    ["export", "1", "--format", "json"],
    ["fit", "1"],
])
def test_every_command_that_reads_gpu_rows_runs_on_them(stage_run, command):
    _stage, db, env, _doc, folder = stage_run
    proc = kvbench(*[part.format(folder=folder) for part in command], "--db", db, env=env, timeout=300)
    assert proc.returncode in (0, 1, 3), proc.stdout[-2000:] + proc.stderr[-2000:]  # a verdict, never usage/crash
    assert "Traceback" not in proc.stderr and (proc.stdout.strip() or list(folder.iterdir()))
