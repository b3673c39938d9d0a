"""Issue 57 item 2: `kvbench import` keeps the facts the run was measured on (`facts`, `facts_source`), so an
export gives the same verdict before and after import — `accept --profile` (by the export, by id, `latest`),
`report`'s heading, `host drift` and a re-export. Synthetic runs: a box first seen with 64 GB and its NIC up,
then an export of a later run on it that found half the DRAM and the NIC down."""

import copy
import json
from datetime import datetime, timedelta

import pytest

from kvbench.store import open_store
from tests.inproc import run_in_process as cli

HOST, CTX, CASE = "test-box-i57-2", "b" * 64, "2222bbbb2222bbbb"
ENV = {"KVBENCH_HOST_ID": HOST, "COLUMNS": "400"}
FULL = {"hostname": "box", "cpu_model": "x", "sockets": 1, "cores": 2, "kernel": "6.1", "gpus": [],
        "dram": {"total_bytes": 64_000_000_000}, "nics": [{"name": "eth0", "rate_gbit": 100, "state": "up"}]}
HALF = {**FULL, "dram": {"total_bytes": 32_000_000_000}, "nics": [{"name": "eth0", "rate_gbit": None, "state": "down"}]}
PROFILE = 'name = "node"\n[expect]\ndram_gb = 64\nnics = 1\n'


def _stored_run(db: str) -> int:
    store = open_store(db)
    store.ensure_host(HOST, "box", FULL)
    store.ensure_context(CTX, {"numpy": "2"})
    run = store.begin_run(host_id=HOST, context_id=CTX, suite="quick", suite_hash="abc", kvbench_version="0.1",
                          git_sha=None, git_dirty=None, tags={}, system_state={}, facts=FULL)
    seconds = (1 << 20) / 10.0 / 1e9
    store.add_result(run, {"bench": "dram.copy", "params": {"size": 1 << 20, "threads": 1}, "case_hash": CASE,
                           "bytes_per_op": 1 << 20, "median_s": seconds, "gbps_median": 10.0, "gbps_p10": 9.98,
                           "gbps_p90": 10.02, "verified": True, "status": "ok", "warnings": [], "extra": {}},
                     [seconds] * 5)
    store.finish_run(run, "complete")
    store.dispose()
    return run


@pytest.fixture
def setting(tmp_path):
    """(the database the box's first run is in, the export of its later run that found half the DRAM and
    the NIC down, the profile)."""
    db = f"sqlite:///{tmp_path / 'k.sqlite'}"
    _stored_run(db)
    doc = json.loads(cli("export", "1", "--db", db, env=ENV).stdout)
    later = copy.deepcopy(doc)
    later["host"]["facts"], later["host"]["facts_source"] = HALF, "run"
    started = datetime.fromisoformat(doc["run"]["started_at"]) + timedelta(hours=1)
    later["run"]["started_at"] = started.isoformat()
    later["run"]["ended_at"] = (started + timedelta(minutes=1)).isoformat()
    path = tmp_path / "e.json"
    path.write_text(json.dumps(later))
    profile = tmp_path / "node.toml"
    profile.write_text(PROFILE)
    return db, str(path), str(profile)


def _accept(ref: str, db: str, profile: str):
    proc = cli("accept", "--run", ref, "--profile", profile, "--db", db, env=ENV)
    return proc.returncode, proc.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("how", ["export", "id", "latest"])
def test_an_export_is_judged_on_its_own_facts_before_and_after_import(setting, how):
    db, export, profile = setting
    if how == "export":
        status, last = _accept(export, db, profile)
    else:
        assert cli("import", export, "--db", db, env=ENV).returncode == 0
        status, last = _accept("2" if how == "id" else "latest", db, profile)
    assert status == 1 and last.startswith("FAIL"), last
    assert "inventory-dram_gb" in last and "inventory-nics" in last, last


def test_an_imported_run_keeps_its_facts_in_drift_the_report_and_a_re_export(setting, tmp_path):
    db, export, profile = setting
    assert cli("import", export, "--db", db, env=ENV).returncode == 0
    again = json.loads(cli("export", "2", "--db", db, env=ENV).stdout)
    assert again["host"]["facts_source"] == "run" and again["host"]["facts"]["dram"] == HALF["dram"]
    drift = json.loads(cli("host", "drift", "2", "--db", db, "--json", "-", env=ENV).stdout)
    changed = json.dumps(drift["since_first"])
    assert "dram" in changed and "nic" in changed, drift
    md = tmp_path / "r.md"
    cli("report", "2", "--profile", profile, "-o", str(md), "--db", db, env=ENV)
    assert md.read_text().lstrip("# ").startswith("FAIL"), md.read_text()[:300]
