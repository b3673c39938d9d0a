"""Commands that only read a small database load only what they use: never the plotting and
data-frame stack (pandas, seaborn, matplotlib), scipy, numba, the GPU stacks (torch, cupy, NIXL),
the template engine, or the PostgreSQL dialect and driver when the database is SQLite; and, but for
`list` (which asks each benchmark whether it runs here), neither numpy nor a benchmark's measuring
module: stored results are described from the declarations (kvbench/benches/declared.py). Each import
is most of a busy box's start-up (issue 40: `list` 2.3 s, `results latest` 3.6 s against 0.06 s for
`--version`); benchmarks/startup.py prints those times beside their targets. These tests hold what
is loaded, never a time."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO

HOST = "startup-imports-test"
# Loaded by no read-only command: plots and frames are `report`'s and `plot`'s, scipy `fit`'s, numba
# fills and checks bytes, torch/cupy/NIXL move them.
NEVER = {"pandas", "seaborn", "matplotlib", "scipy", "numba", "torch", "cupy", "nixl", "nixl_cu13", "jinja2"}
POSTGRES = {"sqlalchemy.dialects.postgresql", "psycopg", "psycopg2"}
# what describing a benchmark's stored results may load of kvbench/benches/ (each measuring module loads numpy)
LIGHT_BENCH_MODULES = {"kvbench.benches.registry", "kvbench.benches.describe", "kvbench.benches.declared",
                       "kvbench.benches.params", "kvbench.benches.peer_params"}
PROBE = """
import sys
sys.argv = ["kvbench", *sys.argv[1:]]
from kvbench.__main__ import main
try:
    main()
except SystemExit as exc:
    code = exc.code
else:
    code = 0
print("LOADED", code, " ".join(sorted(sys.modules)), file=sys.stderr)
"""


@pytest.fixture(scope="module")
def small_db(tmp_path_factory) -> str:
    """Two runs of two dram.copy cases under this test's host id, written through the store API."""
    from kvbench.benches import get_bench
    from kvbench.benches.params import case_hash
    from kvbench.store import open_store

    url = f"sqlite:///{tmp_path_factory.mktemp('startup') / 'small.sqlite'}"
    store = open_store(url)
    store.ensure_host(HOST, "startup-node", {"hostname": "startup-node", "cpu_model": "test", "sockets": 1,
                                             "gpus": []})
    store.ensure_context("startup-context", {})
    for r in range(2):
        run_id = store.begin_run(host_id=HOST, context_id="startup-context", suite="quick", suite_hash=None,
                                 kvbench_version="test", git_sha=None, git_dirty=None, tags={}, system_state={},
                                 cases_planned=2)
        items = []
        for size in ("4MiB", "64MiB"):
            params = get_bench("dram.copy").canonical_params({"size": size, "threads": 1})
            seconds = [params["size"] / ((10 + r + i / 10) * 1e9) for i in range(5)]
            median = sorted(seconds)[2]
            items.append(({"bench": "dram.copy", "params": params, "case_hash": case_hash("dram.copy", params),
                           "bytes_per_op": params["size"], "median_s": median, "p10_s": min(seconds),
                           "p90_s": max(seconds), "mean_s": median, "stdev_s": 0.0, "min_s": min(seconds),
                           "max_s": max(seconds), "gbps_median": params["size"] / median / 1e9,
                           "gbps_p10": params["size"] / max(seconds) / 1e9,
                           "gbps_p90": params["size"] / min(seconds) / 1e9, "verified": True, "status": "ok",
                           "warnings": [], "extra": {}}, seconds))
        store.add_results(run_id, items)
        store.finish_run(run_id, "complete")
    store.dispose()
    return url


def loaded_by(*args: str, db: str) -> set[str]:
    """The modules one `kvbench ARGS` process had loaded when it ended; the command must have worked."""
    import os

    env = {**os.environ, "KVBENCH_DB": db, "KVBENCH_HOST_ID": HOST, "COLUMNS": "120"}
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=300,
                          cwd=REPO, env=env)
    line = next(x for x in proc.stderr.splitlines() if x.startswith("LOADED "))
    _, code, *modules = line.split()
    assert code in ("0", "None"), proc.stderr
    return set(modules)


READ_ONLY = [
    ("info",),
    ("list",),
    ("list", "--json", "-"),
    ("host", "list"),
    ("results", "latest"),
    ("results", "1", "2", "--format", "csv"),
    ("tag", "1", "note"),
    ("history", "dram.copy"),
    ("compare", "1", "2"),
    ("host", "drift", "2"),
    ("version",),
]


@pytest.mark.parametrize("args", READ_ONLY, ids=" ".join)
def test_a_read_only_command_loads_no_heavy_library(args, small_db):
    loaded = loaded_by(*args, db=small_db)
    tops = {m.split(".")[0] for m in loaded}
    if args[0] == "list":  # its answer is whether each NIXL backend starts here: it starts one to say so
        tops -= {"nixl", "nixl_cu13"}
    assert not NEVER & tops, f"kvbench {' '.join(args)} loaded {sorted(NEVER & tops)}"
    assert not POSTGRES & loaded, f"kvbench {' '.join(args)} on SQLite loaded {sorted(POSTGRES & loaded)}"
    if args[0] in ("list", "version"):  # no database opened: no SQLAlchemy either
        assert "sqlalchemy" not in tops
    if args[0] != "list":  # a stored result is described from the benchmarks' declarations (benches/declared.py),
        # its figures compared with the standard library's math: no numpy, no benchmark's measuring module
        assert "numpy" not in tops
        assert not {m for m in loaded if m.startswith("kvbench.benches.") and m.count(".") == 2} - LIGHT_BENCH_MODULES
    if args[0] == "tag":  # SQLite's own dialect is what its write needs (INSERT … ON CONFLICT), and only it
        assert "sqlalchemy.dialects.sqlite" in loaded

