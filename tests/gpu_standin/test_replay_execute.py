"""`kvbench replay --execute` on the CUDA stand-in: the window's restores go into HBM (auto: restores
priced into the GPU on a CUDA host), every byte checked, stored as a kv.replay run whose id the stored
replay names. The stand-in's times stay in the temporary folder: this test reads bytes and ids, never
a speed."""

import json
import subprocess
import sys

from tests.cli.test_replay import small_trace  # noqa: F401  (the fixture)
from tests.conftest import REPO
from tests.gpu_standin import subprocess_env


def kvbench(*args):
    return subprocess.run([sys.executable, "-m", "kvbench", *args], capture_output=True, text=True, cwd=REPO,
                          env=subprocess_env(), timeout=600)


def test_the_window_is_restored_into_hbm_and_stored(tmp_path, small_trace):  # noqa: F811
    url = f"sqlite:///{tmp_path}/kv.sqlite"
    done = kvbench("replay", "--trace", small_trace, "--model", "Llama-3.1-8B", "--gpu", "H100", "--db", url,
                   "--tier", "dram=1TB", "--execute", "4", "--start", "100", "--json", "-")
    assert done.returncode == 0, done.stderr
    executed = json.loads(done.stdout)["executed"]
    assert executed["path"].startswith("DRAM → GPU") and executed["restores"] >= 1
    results = json.loads(kvbench("results", str(executed["run_id"]), "--db", url, "--json", "-").stdout)
    row = next(r for r in results["results"] if r["bench"] == "kv.replay")
    assert row["status"] == "ok" and row["verified"] and row["params"]["dst"].startswith("device")
    assert row["params"]["src"] == "pinned" and row["params"]["strategy"] in ("ce-batch", "ce-graph")
    shown = json.loads(kvbench("replay", "--show", "1", "--db", url, "--json", "-").stdout)
    assert shown["executed_run_id"] == executed["run_id"]
