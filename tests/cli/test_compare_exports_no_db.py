"""`compare A.json B.json` needs no database (issue 57 item 9): where --db or KVBENCH_DB names one that
does not exist or cannot be reached, the exports are judged alone and standard error says no history was read."""

import json

import pytest

from tests.inproc import run_in_process as cli

QUICK = "tests/fixtures/runs/quick-cpu-vm.json"


@pytest.fixture
def two_exports(tmp_path):
    doc = json.loads(open(QUICK).read())
    a, b = tmp_path / "A.json", tmp_path / "B.json"
    a.write_text(json.dumps(doc))
    doc["run"]["id"] = 999
    doc["run"]["started_at"], doc["run"]["ended_at"] = "2030-01-01T00:00:00+00:00", "2030-01-01T00:10:00+00:00"
    b.write_text(json.dumps(doc))
    return str(a), str(b)


@pytest.mark.parametrize("how", ["--db", "KVBENCH_DB", "postgresql"])
def test_two_exports_compare_without_the_database_named(tmp_path, two_exports, how):
    missing = f"sqlite:///{tmp_path / 'nope' / 'k.sqlite'}"
    if how == "postgresql":
        missing = "postgresql://kv:secret@127.0.0.1:1/none"
    args, env = (["--db", missing], None) if how == "--db" else ([], {"KVBENCH_DB": missing})
    proc = cli("compare", *two_exports, *args, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "no history read" in proc.stderr and proc.stderr.strip().splitlines()[-1].startswith("PASS"), proc.stderr
    assert "secret" not in proc.stderr and not (tmp_path / "nope").exists()
