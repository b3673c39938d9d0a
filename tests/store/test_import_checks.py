"""`kvbench import` refuses what a reader of the database could not read (issue 57 item 7): every check
the export reader (`compare A.json B.json`) makes, and what one database must not hold (a run still
`running`, a `complete` run with no results, one case twice), before anything is stored and before the
"already here" look-up, in one line, exit 2. Then `report`, `fit`, `accept` and `host drift` read what
import stored without a traceback."""

import copy
import json

import pytest
import sqlalchemy as sa

from tests.inproc import run_in_process

QUICK = "tests/fixtures/runs/quick-cpu-vm.json"


def _export() -> dict:
    with open(QUICK) as f:
        return json.load(f)


def _tamper(doc: dict, how: str) -> dict:
    doc = copy.deepcopy(doc)
    ok = next(r for r in doc["results"] if r["status"] == "ok")
    if how == "params":  # a parameter the result's benchmark does not even take: still one value, or refused
        ok["params"]["strategy"] = {"a": [1]}
    elif how == "params of its own":
        ok["params"]["size"] = {"a": [1]}
    elif how == "host.facts":
        doc["host"]["facts"] = "abc"
    elif how == "context.facts":
        doc.setdefault("context", {"id": doc["run"]["context_id"]})["facts"] = [1, 2]
    elif how == "tags":
        doc["run"]["tags"] = "baseline"
    elif how == "cases_planned":
        doc["run"]["cases_planned"] = "9"
    elif how == "metadata":
        ok["metadata"] = "x"
    elif how == "twice":
        doc["results"].append(copy.deepcopy(ok))
    elif how == "running":
        doc["run"]["status"], doc["run"]["ended_at"] = "running", None
    elif how == "empty":
        doc["results"] = []
    return doc


def _count_runs(db: str) -> int:
    engine = sa.create_engine(db)
    try:
        with engine.connect() as conn:
            return conn.execute(sa.text("select count(*) from run")).scalar()
    except sa.exc.OperationalError:
        return 0
    finally:
        engine.dispose()


TAMPERED = ["params", "params of its own", "host.facts", "context.facts", "tags", "cases_planned", "metadata", "twice", "running", "empty"]
NAMED = {"params": "params.strategy", "params of its own": "result", "host.facts": "host.facts", "context.facts": "context.facts", "tags": "tags",
         "cases_planned": "cases_planned", "metadata": "metadata", "twice": "both case", "running": "running",
         "empty": "no results"}


@pytest.mark.parametrize("how", TAMPERED)
def test_a_tampered_export_is_refused_in_one_line_and_nothing_is_stored(tmp_path, how):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_tamper(_export(), how)))
    db = f"sqlite:///{tmp_path / 'k.sqlite'}"
    ran = run_in_process("import", str(path), "--db", db)
    assert ran.returncode == 2, (ran.stdout, ran.stderr)
    lines = [line for line in ran.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in ran.stderr and NAMED[how] in lines[0], ran.stderr
    assert "bad.json" in lines[0]
    assert _count_runs(db) == 0


def test_a_tampered_copy_of_a_stored_run_is_refused_not_already_here(tmp_path):
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(_export()))
    bad.write_text(json.dumps(_tamper(_export(), "host.facts")))
    db = f"sqlite:///{tmp_path / 'k.sqlite'}"
    assert run_in_process("import", str(good), "--db", db).returncode == 0
    ran = run_in_process("import", str(bad), "--db", db)
    assert ran.returncode == 2 and "already here" not in ran.stdout and "host.facts" in ran.stderr, ran


def test_what_import_stores_every_reader_reads(tmp_path):
    good = tmp_path / "good.json"
    good.write_text(json.dumps(_export()))
    db = f"sqlite:///{tmp_path / 'k.sqlite'}"
    assert run_in_process("import", str(good), "--db", db).returncode == 0
    for args in (["fit", "1"], ["host", "drift"], ["accept", "--run", "1"]):
        ran = run_in_process(*args, "--db", db)
        assert "Traceback" not in ran.stderr and ran.returncode in (0, 1, 3), (args, ran.stderr[-1500:])


def test_compare_refuses_the_same_tampered_exports(tmp_path):
    """The reader and import share their checks: what one refuses the other refuses."""
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(_export()))
    for how in ("params", "host.facts", "tags"):
        bad.write_text(json.dumps(_tamper(_export(), how)))
        ran = run_in_process("compare", str(good), str(bad))
        assert ran.returncode == 2 and NAMED[how] in ran.stderr, (how, ran.stderr)
