"""docs/cluster.md's one-host recipe runs as written: its `cluster-test.toml` block saved as that file,
its four-rank block run by bash in the same folder (kvbench and python from this environment, a free
port through KVBENCH_PORT): one cluster run, 12 of 12 pairs ok in the matrix it prints. (Its sbatch
script runs as written in tests/cluster/test_slurm.py.)

Timeouts below only bound hangs; they are generous because the test box is shared and slow."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kvbench.backends.nixl import backend_unavailable_reason
from kvbench.peers.protocol import free_port
from tests.conftest import REPO

pytestmark = pytest.mark.skipif(backend_unavailable_reason("UCX") is not None,
                                reason=f"{backend_unavailable_reason('UCX')}")


def blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", (REPO / "docs" / "cluster.md").read_text(), re.S)


def test_the_one_host_recipe_runs_as_written(tmp_path):
    (suite,) = [b for b in blocks("toml") if b.startswith('name = "cluster-test"')]
    (recipe,) = [b for b in blocks("sh") if "PMI_RANK=$r PMI_SIZE=4" in b]
    (tmp_path / "cluster-test.toml").write_text(suite)
    env = {k: v for k, v in os.environ.items() if k != "UCX_LOG_FILE" and not k.startswith(
        ("RANK", "WORLD_SIZE", "MASTER_", "LOCAL_RANK", "SLURM_", "OMPI_", "PMI_"))}
    env.update({"KVBENCH_PORT": str(free_port()), "PYTHONPATH": str(REPO), "COLUMNS": "200",
                "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"})
    done = subprocess.run(["bash", "-e", "-c", recipe], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "12 ok pair(s)" in done.stdout and "cluster:" in done.stdout, done.stdout[-2000:]
