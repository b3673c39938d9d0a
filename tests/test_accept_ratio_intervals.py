"""Issue 57 item 4 through `accept`: a ratio from 5 pairs is not judged as exact (INCOMPLETE, "5 pairs: too
few to bound the ratio"), and a ratio verdict that stands carries its interval (`low`/`high`, and in its
text) — however the run reaches `accept` (export, imported export by id and `latest`). The live path's
re-sampling is tests/analyze/test_uncertain.py's (resample_plan takes the case)."""

import json

import pytest

from tests.analyze.rules import kv_ratio, quick_run, rule, rules_file
from tests.analyze.test_uncertain import CLEAR, FIVE, with_ratios
from tests.inproc import run_in_process as cli

WAYS = ["export", "id", "latest"]


def _accept(tmp_path, how, ratios, minimum):
    path = tmp_path / "run.json"
    path.write_text(json.dumps(with_ratios(quick_run(), ratios)))
    rules = rules_file(tmp_path, rule("kv-fragments-vs-contiguous", "kv.restore", ratio=kv_ratio(minimum)))
    env = {"KVBENCH_HOST_ID": "test-box-i57-4", "COLUMNS": "400"}
    db = f"sqlite:///{tmp_path / 'k.sqlite'}"
    if how == "export":
        ref = str(path)
    else:
        assert cli("import", str(path), "--db", db, env=env).returncode == 0
        ref = "1" if how == "id" else "latest"
    proc = cli("accept", "--run", ref, "--rules", str(rules), "--db", db, "--json", str(tmp_path / "a.json"), env=env)
    verdicts = json.loads((tmp_path / "a.json").read_text())["verdicts"]
    return proc, next(v for v in verdicts if v["rule"] == "kv-fragments-vs-contiguous")


@pytest.mark.parametrize("how", WAYS)
def test_five_pairs_are_incomplete_not_a_pass(tmp_path, how):
    proc, v = _accept(tmp_path, how, FIVE, 0.92)
    assert v["verdict"] == "INCOMPLETE" and "5 pairs: too few to bound the ratio" in v["why"], v
    assert proc.returncode == 3, proc.stderr
    assert "uncertain: too few pairs to bound the ratio" in proc.stderr.strip().splitlines()[-1], proc.stderr


@pytest.mark.parametrize("how", WAYS)
def test_a_passing_ratio_carries_its_interval(tmp_path, how):
    _proc, v = _accept(tmp_path, how, CLEAR, 0.8)
    assert v["verdict"] == "PASS" and (v["low"], v["high"]) == (0.96, 0.99), v
    assert "95 % interval 0.960–0.990" in v["measured"]
