"""Every JSON document kvbench prints (docs/json-outputs.md) checked against its JSON Schema
(docs/schemas/), made by the real commands; and `--json FILE|-` means one thing everywhere: with `-`
standard output holds the JSON alone. Commands that measure (run, accept --suite) print it through a
real `kvbench` process, so nothing written to the real standard output can hide; the others run in
this process (`cli`, tests/inproc.py), which answers alike without a process's start-up."""

from __future__ import annotations

import json

import pytest

from tests.conftest import FIXTURES, REPO, run_cli
from tests.inproc import run_in_process as cli

jsonschema = pytest.importorskip("jsonschema")

SCHEMAS = REPO / "docs" / "schemas"
QUICK = str(FIXTURES / "runs" / "quick-cpu-vm.json")
KV = str(FIXTURES / "runs" / "kv-restore-cpu-vm.json")


def _valid(name: str, text: str) -> dict:
    doc = json.loads(text)  # standard output is the JSON document and nothing else
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(doc, schema, cls=jsonschema.Draft202012Validator)
    return doc


@pytest.fixture(scope="module")
def other(tmp_path_factory) -> str:
    """The quick export again as another run (compare refuses a run compared with itself)."""
    doc = json.loads((FIXTURES / "runs" / "quick-cpu-vm.json").read_text())
    doc["run"]["id"] = 2
    path = tmp_path_factory.mktemp("other") / "other.json"
    path.write_text(json.dumps(doc))
    return str(path)


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    """Two small real runs of this host."""
    url = f"sqlite:///{tmp_path_factory.mktemp('db') / 'k.sqlite'}"
    for _ in range(2):
        proc = cli("run", "--bench", "dram.copy", "--set", "size=64KiB", "--samples", "5", "--db", url)
        assert proc.returncode == 0, proc.stderr
    return url


@pytest.mark.parametrize("name,args", [
    ("run", ["results", QUICK, "--format", "json"]),
    ("run", ["results", QUICK, "--json", "-"]),
    ("run", ["export", QUICK, "--format", "json"]),
    ("compare", ["compare", QUICK, "OTHER", "--json", "-"]),
    ("compare", ["compare", QUICK, "OTHER", "--format", "json"]),
    ("fit", ["fit", KV, "--json", "-"]),
    ("accept", ["accept", "--run", QUICK, "--json", "-"]),
    ("info", ["info", "--json", "-"]),
    ("list", ["list", "--json", "-"]),
    ("doctor", ["doctor", "--json", "-", "--seconds", "0.2"]),
])
def test_documents_without_a_database_match_their_schema(other, name, args):
    proc = cli(*[other if a == "OTHER" else a for a in args])
    assert proc.returncode in (0, 1, 3), proc.stderr
    _valid(name, proc.stdout)


@pytest.mark.parametrize("name,args", [
    ("run", ["run", "--bench", "dram.copy", "--set", "size=64KiB", "--samples", "5", "--json", "-"]),
    ("history", ["history", "dram.copy", "--json", "-"]),
    ("fleet", ["fleet", "--json", "-"]),
    ("host-list", ["host", "list", "--json", "-"]),
    ("compare", ["compare", "1", "2", "--json", "-"]),
    ("accept", ["accept", "--suite", "tests/fixtures/tiny.toml", "--json", "-"]),  # runs the suite: its table to stderr
])
def test_documents_from_a_database_match_their_schema(db, name, args):
    measures = args[0] == "run" or "--suite" in args
    proc = (run_cli if measures else cli)(*args, "--db", db)
    assert proc.returncode in (0, 1, 3), proc.stderr
    doc = _valid(name, proc.stdout)
    if name == "fleet":
        assert all(isinstance(r["outlier"], bool) for r in doc["rows"]) and doc["rows"]


@pytest.mark.parametrize("args", [["info"], ["list"], ["compare", QUICK, "OTHER"], ["fit", KV],
                                  ["accept", "--run", QUICK], ["results", QUICK]])
def test_json_file_writes_the_document_and_keeps_the_table(tmp_path, other, args):
    target = tmp_path / "out.json"
    proc = cli(*[other if a == "OTHER" else a for a in args], "--json", str(target))
    assert proc.returncode in (0, 1, 3), proc.stderr
    assert json.loads(target.read_text()) and proc.stdout.strip() and not proc.stdout.lstrip().startswith("{")


def test_numpy_values_are_written_as_json_booleans_and_numbers(tmp_path):
    import numpy as np

    from kvbench.cli.common import write_json

    target = tmp_path / "x.json"
    write_json({"outlier": np.bool_(False), "gbps": np.float64(1.5), "runs": np.int64(3)}, str(target))
    assert json.loads(target.read_text()) == {"outlier": False, "gbps": 1.5, "runs": 3}


def test_results_format_json_and_a_json_file_are_refused_together(tmp_path):
    proc = cli("results", QUICK, "--format", "json", "--json", str(tmp_path / "x.json"))
    assert proc.returncode == 2 and "not both" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_the_link_matrix_document_matches_its_schema(tmp_path):
    """`fleet --pairs --json -` on a cluster run stored as the launcher stores it (synthetic rates)."""
    from kvbench.store import open_store
    from tests.analyze.test_link_matrix import cluster_run

    url = f"sqlite:///{tmp_path / 'k.sqlite'}"
    cluster_run(open_store(url))
    for args in (["--run", "1"], []):
        proc = cli("fleet", "--pairs", *args, "--json", "-", "--db", url)
        assert proc.returncode == 0, proc.stderr
        (m,) = _valid("fleet-pairs", proc.stdout)["matrices"]
        assert {c["status"] for c in m["cells"]} == {"ok", "failed", "missing"}
