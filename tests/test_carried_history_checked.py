"""Issue 57 item 3: a baseline export's carried `history` is checked before it is trusted — one that does
not hold the baseline's own fast end, or spreads beyond any rate noise, is refused in one line (exit 2) by
`compare` and `report --baseline`, and never turns a large drop into a PASS. Synthetic stored runs."""

import json

import pytest

from tests.inproc import run_in_process as cli
from tests.one_case_runs import store_one_case_runs

HOST, CTX, CASE = "test-box-i57-3", "f" * 64, "0a1b2c3d4e5f6789"
ENV = {"KVBENCH_HOST_ID": HOST, "COLUMNS": "400"}


def _baseline_with(tmp_path, history):
    db = f"sqlite:///{tmp_path / 'k.sqlite'}"
    store_one_case_runs(db, HOST, CTX, CASE, "quick", [(5.0, {}, {}), (5.0, {}, {})])
    doc = json.loads(cli("export", "1", "--db", db, env=ENV).stdout)
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps({**doc, "history": {CASE: history(doc)}}))
    fresh = f"sqlite:///{tmp_path / 'job.sqlite'}"  # a CI job's fresh database: the carried history is used
    store_one_case_runs(fresh, HOST, CTX, CASE, "quick", [(0.5, {}, {})])  # −90 %
    return str(path), fresh


@pytest.mark.parametrize("history", [
    lambda doc: [1e308, 1e-308, 5.0],  # the trial's: 600 orders of magnitude, without the baseline's own fast end
    lambda doc: [1e308, 1e-308, doc["results"][0]["gbps"]["p90"]],  # its own fast end, but a spread no noise has
    lambda doc: [0.5, 0.51, 0.49],  # a level far below the baseline: not its runs
], ids=["trial", "spread", "not-its-own"])
@pytest.mark.parametrize("command", ["compare", "report"])
def test_a_carried_history_no_export_writes_is_refused_in_one_line(tmp_path, history, command):
    baseline, job = _baseline_with(tmp_path, history)
    args = (["compare", baseline, "latest"] if command == "compare" else
            ["report", "latest", "--baseline", baseline, "-o", str(tmp_path / "r.md")])
    proc = cli(*args, "--db", job, env=ENV)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and "'history'" in lines[-1], proc.stdout + proc.stderr


def test_a_history_as_export_writes_it_still_judges(tmp_path):
    baseline, job = _baseline_with(tmp_path, lambda doc: [5.0 * 1.002, 5.05 * 1.002, doc["results"][0]["gbps"]["p90"]])
    proc = cli("compare", baseline, "latest", "--db", job, env=ENV)
    assert proc.returncode == 1 and proc.stderr.strip().splitlines()[-1].startswith("FAIL: 1 case(s) slower")
