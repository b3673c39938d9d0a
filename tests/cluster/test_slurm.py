"""Slurm for real: a one-node Slurm of the distribution's daemons (tests/cluster/slurm.py) runs
docs/cluster.md's batch script as it stands there (`sbatch --wait`), whose `srun -n 4` starts four
ranks of `python -m kvbench.cluster.launch --pattern pairs` on this host: one cluster run, all 12 pairs ok.
Skips with the reason where Slurm is not installed or will not start.

Timeouts below only bound hangs; they are generous because the test box is shared and slow."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kvbench.backends.nixl import backend_unavailable_reason
from tests.cluster.netns import SUITE, stored
from tests.cluster.slurm import start_slurm, stop_slurm
from tests.conftest import REPO, launch_port, run_cli

pytestmark = pytest.mark.skipif(backend_unavailable_reason("UCX") is not None,
                                reason=f"{backend_unavailable_reason('UCX')}")


def sbatch_script() -> str:
    """The batch script of docs/cluster.md (the sh block that starts with #!/bin/bash and #SBATCH)."""
    text = (REPO / "docs" / "cluster.md").read_text()
    (script,) = [b for b in re.findall(r"```sh\n(.*?)```", text, re.S) if b.startswith("#!/bin/bash\n") and "\n#SBATCH" in b]
    return script


@pytest.fixture
def slurm(tmp_path):
    made = start_slurm(tmp_path / "slurm")
    try:
        yield made
    finally:
        stop_slurm(made)


def test_srun_starts_four_ranks_of_the_pairs_pattern_as_docs_cluster_md_says(slurm, tmp_path):
    work = tmp_path / "job"
    work.mkdir()
    (work / "cluster-test.toml").write_text(SUITE + '[[bench]]\nid = "net.write"\n')
    (work / "job.sh").write_text(sbatch_script())
    env = {**slurm.env, "KVBENCH_PORT": str(launch_port()), "UCX_TLS": "tcp,self", "PYTHONPATH": str(REPO),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    env = {k: v for k, v in env.items() if k != "UCX_LOG_FILE" and not k.startswith(
        ("RANK", "WORLD_SIZE", "MASTER_", "LOCAL_RANK", "OMPI_", "PMI_"))}
    job = subprocess.run(["sbatch", "--wait", "job.sh"], cwd=work, env=env, capture_output=True, text=True,
                         timeout=900)
    logs = "".join(p.read_text(errors="replace") for p in work.glob("kvbench-pairs-*.out"))
    said = [line for line in logs.splitlines() if "error" in line.lower()]  # every rank's one line, wherever it is
    assert job.returncode == 0, job.stdout + job.stderr + "\n".join(said) + logs[-3000:] + slurm.log_tail()
    results = stored(work / "cluster.sqlite")
    assert len(results) == 12 and all(r["status"] == "ok" and r["verified"] for r in results), \
        [(r["params"]["src_host"], r["params"]["dst_host"], r["reason"]) for r in results]
    assert len({r["extra"]["cluster"]["id"] for r in results}) == 1  # one launch, one cluster run
    shown = run_cli("fleet", "--pairs", "--run", "latest", "--db", f"sqlite:///{work / 'cluster.sqlite'}", "--json", "-")
    (matrix,) = json.loads(shown.stdout)["matrices"]
    assert sum(c["status"] == "ok" for c in matrix["cells"]) == 12
    print(f"\nsbatch (srun -n 4) on a one-node Slurm: {matrix['run_id']}: " + ", ".join(
        f"{c['src_host']}->{c['dst_host']} {c['gbps']:.3g}" for c in matrix["cells"] if c["gbps"]) + " GB/s")
