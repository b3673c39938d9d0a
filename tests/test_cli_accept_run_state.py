"""`kvbench accept` judges the run it was given as a whole, however the run reached it (measured here, a
run id, `latest`, a JSON export): any failed case of it is a FAIL, named in the last line, even where
no rule covers that case (issue 43.1: a failed net.write beside one passing rule gave PASS), and a run
that is not whole (aborted, crashed, still running, short of its cases) is never a PASS: INCOMPLETE
with its status in the last line, or refused (issue 43.3). Runs are the tiny suite's, their state set
by the test (a failed case planted, a status written), never by how this machine behaves."""

import dataclasses
import json
import signal

import pytest
import sqlalchemy as sa

from kvbench.run.interrupts import Interrupted
from tests.inproc import run_in_process as cli

PLANTED = "integrity check failed: planted by the test"
# one rule on the contiguous case only: the fragmented case that fails is covered by no rule
RULES = 'name = "t"\n[[rule]]\nid = "floor"\nbench = "dram.copy"\nparams = { fragment = 0 }\nmin = { value = 1, unit = "MB/s" }\n'


def last_line(proc) -> str:
    return proc.stderr.strip().splitlines()[-1]


@pytest.fixture
def rules(tmp_path):
    path = tmp_path / "rules.toml"
    path.write_text(RULES)
    return str(path)


def _sql(db: str, *statements: str) -> None:
    engine = sa.create_engine(db)
    with engine.begin() as conn:
        for statement in statements:
            conn.execute(sa.text(statement))
    engine.dispose()


def _export(db: str, ref: str, tmp_path, name: str = "export.json") -> str:
    path = tmp_path / name
    proc = cli("export", ref, "--format", "json", "-o", str(path), "--db", db)
    assert proc.returncode == 0, proc.stderr
    return str(path)


def _plant_failure(monkeypatch, fragment: int = 4096) -> None:
    """The fragmented case of a run measured now fails its check (the runner's own failed result)."""
    from kvbench.run import runner

    real = runner.run_case

    def run_case(case, *args, **kwargs):
        result = real(case, *args, **kwargs)
        if case.params.get("fragment") == fragment:
            return dataclasses.replace(result, status="failed", reason=PLANTED, measurement=None, peak=None)
        return result

    monkeypatch.setattr(runner, "run_case", run_case)


def _assert_failed_named(proc) -> None:
    assert proc.returncode == 1, proc.stderr
    line = last_line(proc)
    assert line.startswith("FAIL: "), line
    assert "1 case(s) failed: dram.copy" in line and "fragment=4KiB" in line and "planted by the test" in line


# --- 43.1: a failed case of the judged run fails the acceptance ---------------------------------------

def test_a_failed_case_no_rule_covers_fails_accept_on_a_stored_run_by_id_latest_and_export(tmp_path, stored_runs,
                                                                                         rules):
    db = stored_runs("tests/fixtures/tiny.toml", 1)
    _sql(db, f"UPDATE result SET status = 'failed', reason = '{PLANTED}' WHERE params LIKE '%4096%'",
         "UPDATE run SET status = 'failed', reason = '1 case(s) failed'")
    export = _export(db, "1", tmp_path)
    for ref in ("1", "latest", export):
        for extra in ((), ("--allow-incomplete",)):  # --allow-incomplete never turns a failed case into exit 0
            junit = tmp_path / "a.xml"
            proc = cli("accept", "--run", ref, "--rules", rules, "--db", db, "--junit", str(junit),
                       "--json", str(tmp_path / "a.json"), *extra)
            _assert_failed_named(proc)
            assert "floor" in proc.stdout and "PASS" in proc.stdout  # the rule itself passed
            doc = json.loads((tmp_path / "a.json").read_text())
            assert doc["verdict"] == "FAIL" and doc["exit_status"] == 1
            assert any("planted by the test" in r for r in doc["reasons"])
            assert "overall verdict: FAIL" in junit.read_text()
    report = tmp_path / "r.md"  # the report's first heading gives the same word
    assert cli("report", "1", "--db", db, "--format", "markdown", "-o", str(report)).returncode == 0
    assert report.read_text().startswith("# FAIL — kvbench report")


def test_a_failed_case_in_a_run_whose_status_says_complete_still_fails_accept(tmp_path, stored_runs, rules):
    """The results decide, not the run's word for itself (an export edited, a status written wrong)."""
    db = stored_runs("tests/fixtures/tiny.toml", 1)
    _sql(db, f"UPDATE result SET status = 'failed', reason = '{PLANTED}' WHERE params LIKE '%4096%'")
    for ref in ("1", _export(db, "1", tmp_path)):
        _assert_failed_named(cli("accept", "--run", ref, "--rules", rules, "--db", db))


def test_a_failed_case_measured_by_accept_itself_is_named_in_the_last_line(monkeypatch, tmp_path, rules):
    _plant_failure(monkeypatch)
    db = f"sqlite:///{tmp_path / 'k.sqlite'}"
    proc = cli("accept", "--suite", "tests/fixtures/tiny.toml", "--rules", rules, "--db", db, "--allow-incomplete")
    _assert_failed_named(proc)


def test_every_failed_case_counts_and_beyond_three_the_rest_are_counted():
    from kvbench.analyze.accept.judge import Verdict
    from kvbench.analyze.accept.verdict import accept_overall

    passed = Verdict("floor", "dram.copy", "fragment=0", "PASS", "9 GB/s", "≥ 1 MB/s", "")
    results = [{"bench": "net.write", "params": {"size": 2**20 * n}, "status": "failed", "reason": f"r{n}"}
               for n in range(1, 6)]
    run = {"run": {"id": 7, "status": "failed"}, "results": results}
    overall = accept_overall([passed], {}, runs=[run])
    assert overall.word == "FAIL" and overall.exit_status(allow_incomplete=True) == 1
    assert "run 7: 5 case(s) failed: net.write" in overall.line and "and 2 more" in overall.line
    assert accept_overall([passed], {}, runs=[{**run, "results": []}]).word == "PASS"


# --- 43.3: a run that is not whole is never accepted ---------------------------------------------------

NOT_WHOLE = {
    "aborted": "UPDATE run SET status = 'aborted', reason = 'interrupted (SIGINT)'",
    "crashed": "UPDATE run SET status = 'crashed', reason = 'no heartbeat for 2000 s'",
    "running": "UPDATE run SET status = 'running', reason = NULL",
    "short of its cases": "UPDATE run SET cases_planned = 5",
}


@pytest.mark.parametrize("state", list(NOT_WHOLE))
def test_a_run_that_is_not_whole_is_incomplete_by_id_and_by_export_its_status_in_the_last_line(
        state, tmp_path, stored_runs, rules):
    db = stored_runs("tests/fixtures/tiny.toml", 1)
    _sql(db, NOT_WHOLE[state])
    export = _export(db, "1", tmp_path)
    word = "complete with 2 of its 5 cases" if state == "short of its cases" else state
    for ref in ("1", export):
        proc = cli("accept", "--run", ref, "--rules", rules, "--db", db, "--json", str(tmp_path / "a.json"))
        assert proc.returncode == 3, proc.stderr
        line = last_line(proc)
        assert line.startswith("INCOMPLETE: run 1 is not whole") and word in line, line
        assert json.loads((tmp_path / "a.json").read_text())["verdict"] == "INCOMPLETE"


def test_an_export_that_says_aborted_without_saying_partial_is_still_incomplete(tmp_path, stored_runs, rules):
    db = stored_runs("tests/fixtures/tiny.toml", 1)
    _sql(db, NOT_WHOLE["aborted"])
    path = tmp_path / "edited.json"
    doc = json.loads(open(_export(db, "1", tmp_path)).read())
    doc["run"]["partial"] = None
    path.write_text(json.dumps(doc))
    proc = cli("accept", "--run", str(path), "--rules", rules)
    assert proc.returncode == 3 and "aborted (interrupted (SIGINT))" in last_line(proc), proc.stderr


def test_an_aborted_run_with_a_failed_case_fails_and_still_says_it_is_not_whole(tmp_path, stored_runs, rules):
    db = stored_runs("tests/fixtures/tiny.toml", 1)
    _sql(db, NOT_WHOLE["aborted"], f"UPDATE result SET status = 'failed', reason = '{PLANTED}' WHERE params LIKE '%4096%'")
    proc = cli("accept", "--run", "1", "--rules", rules, "--db", db)
    _assert_failed_named(proc)
    assert "run 1 is not whole" in last_line(proc)


def test_latest_never_picks_a_run_that_is_not_whole_and_says_which_it_judged(tmp_path, stored_runs, rules):
    db = stored_runs("tests/fixtures/tiny.toml", 2)
    _sql(db, "UPDATE run SET status = 'aborted', reason = 'interrupted (SIGINT)' WHERE id = 2")
    proc = cli("accept", "--run", "latest", "--rules", rules, "--db", db)
    assert proc.returncode == 0 and "acceptance of run 1" in proc.stdout, proc.stderr
    _sql(db, "UPDATE run SET status = 'crashed' WHERE id = 1")
    proc = cli("accept", "--run", "latest", "--rules", rules, "--db", db)
    assert proc.returncode == 2 and "no whole run" in last_line(proc), proc.stderr


def test_accept_interrupted_while_it_measures_gives_no_verdict(monkeypatch, tmp_path, rules):
    from kvbench.run import runner

    real, seen = runner.run_case, []

    def run_case(case, *args, **kwargs):
        seen.append(case)
        if len(seen) == 2:
            raise Interrupted(signal.SIGINT)
        return real(case, *args, **kwargs)

    monkeypatch.setattr(runner, "run_case", run_case)
    db = f"sqlite:///{tmp_path / 'k.sqlite'}"
    proc = cli("accept", "--suite", "tests/fixtures/tiny.toml", "--rules", rules, "--db", db, "--allow-incomplete")
    assert proc.returncode == 128 + signal.SIGINT, proc.stderr
    assert "marked aborted" in proc.stderr and "PASS" not in proc.stderr
    proc = cli("accept", "--run", "1", "--rules", rules, "--db", db)
    assert proc.returncode == 3 and "run 1 is not whole" in last_line(proc) and "aborted" in last_line(proc)


# --- 43.4: every [expect] key of the profile is judged, whatever rule file is in use --------------------

@pytest.mark.parametrize("own_rules", [True, False])
def test_a_profile_promising_only_nvlink_fails_a_box_without_gpus_by_every_way_to_accept(
        own_rules, monkeypatch, tmp_path, stored_runs, rules):
    profile = tmp_path / "nvlink.toml"
    profile.write_text('name = "nvlink only"\n[expect]\nnvlink = true\n')
    chosen = ("--rules", rules) if own_rules else ()
    live_db = f"sqlite:///{tmp_path / 'live.sqlite'}"
    db = stored_runs("tests/fixtures/tiny.toml", 1)
    ways = {"live": ("--suite", "tests/fixtures/tiny.toml", "--db", live_db), "id": ("--run", "1", "--db", db),
            "latest": ("--run", "latest", "--db", db), "export": ("--run", _export(db, "1", tmp_path))}
    for way, args in ways.items():
        proc = cli("accept", *args, *chosen, "--profile", str(profile), "--allow-incomplete", "--json",
                   str(tmp_path / "a.json"))
        assert proc.returncode == 1, (way, proc.stderr)
        assert last_line(proc).startswith("FAIL: ") and "inventory-nvlink" in last_line(proc), (way, last_line(proc))
        nvlink = [v for v in json.loads((tmp_path / "a.json").read_text())["verdicts"] if v["rule"] == "inventory-nvlink"]
        assert [v["verdict"] for v in nvlink] == ["FAIL"] and "no pair to join" in nvlink[0]["measured"], way


def test_a_promised_fact_the_run_did_not_record_is_incomplete_beside_a_passing_rule_stored_or_exported(
        tmp_path, stored_runs, rules):
    """issue 44.5: the profile's dram_channels, unread (no dmidecode), beside the passing floor rule."""
    profile = tmp_path / "channels.toml"
    profile.write_text('name = "eight channels"\n[expect]\ndram_channels = 8\n')
    db = stored_runs("tests/fixtures/tiny.toml", 1)
    _sql(db, "UPDATE host SET facts = json_set(facts, '$.dram', json('{\"reason\": \"dmidecode is not installed\"}'))")
    for ref in ("1", "latest", _export(db, "1", tmp_path)):
        proc = cli("accept", "--run", ref, "--rules", rules, "--db", db, "--profile", str(profile))
        assert proc.returncode == 3, proc.stderr
        assert "floor" in proc.stdout and last_line(proc).startswith("INCOMPLETE: ")
        assert "inventory-dram_channels (dmidecode is not installed)" in last_line(proc), last_line(proc)
