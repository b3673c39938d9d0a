"""Regression verdicts on a box that is never quiet (issue 37) and what contention can explain
(issue 43 item 2), through the commands as a CI job calls them: every output states one allowance
per case, contended runs count toward the history, a drop against a contended base gates, and
`--allow-incomplete` never passes a drop far beyond any plausible contention — however the runs
reach `compare` (run ids, `latest`, `baseline`, JSON exports)."""

import json

import pytest
from rich.console import Console

from kvbench.analyze.regress.noise import allowance, allowance_words, between_run_noise
from kvbench.store import open_store
from tests.inproc import run_in_process as cli
from tests.one_case_runs import store_one_case_runs

HOST, CTX, CASE = "test-box-i37", "c" * 64, "0123456789abcdef"
BUSY = {"contention": {"contended": ["other processes used 66% of the CPUs (1.32 of 2)"], "faults": [],
                       "host": {"others_cpu_fraction": 0.66}}}
QUIET = {"contention": {"contended": [], "faults": [], "host": {"others_cpu_fraction": 0.01}}}
ENV = {"KVBENCH_HOST_ID": HOST, "COLUMNS": "400"}


def _store_runs(db: str, runs: list[tuple[float, dict]]) -> None:
    """One run per (median GB/s, extra) of one dram.copy case, its samples within ±0.2 %."""
    store_one_case_runs(db, HOST, CTX, CASE, "quick", [(gbps, {}, extra) for gbps, extra in runs])


def test_every_output_states_one_allowance_for_one_case(tmp_path):
    # issue 37 item 4: the --repeat table said ±69.3 % (ln 2 as a percentage), the dashboard export
    # ±15.0 % and compare ±15 % for one case; and every run was contended, so none counted as history
    db = f"sqlite:///{tmp_path / 'k.sqlite'}"
    repeat = [10.0, 12.5, 9.0]  # `run --repeat 3` beside a busy neighbour: all three contended
    _store_runs(db, [(gbps, BUSY) for gbps in repeat] + [(10.4, BUSY)])
    fast = [g * 1.002 for g in repeat]
    assert allowance_words(allowance(between_run_noise(fast), 0.05, fast)) == "a drop beyond −50.0 % gates"
    # capped at a halving: ln 2, once printed as ±69.3 %; issue 57 items 0 and 10: runs that vary beyond the
    # cap cannot gate a halving, and every output says so, naming its base
    words = "baseline too noisy to gate: re-take it on a quiet box (its runs vary beyond a halving; against one base run)"

    from kvbench.cli.run import show_repeats  # what `run --repeat 3` prints after its third run

    console = Console(record=True, width=400)
    show_repeats(open_store(db, read_only=True), [1, 2, 3], console)
    printed = {"repeat table": console.export_text()}
    proc = cli("compare", "3", "4", "--db", db, "--format", "json", env=ENV)
    (c,) = json.loads(proc.stdout)["comparisons"]
    assert c["history_runs"] == 3 and "assumed" not in c["note"], c["note"]
    assert c["allowance_ln"] == pytest.approx(allowance(between_run_noise(fast), 0.05, fast))
    assert c["allowed_drop"] == pytest.approx(0.5) and c["verdict"] == "too noisy" and c["allowance"] == words
    printed["compare"] = c["note"]
    printed["compare table"] = cli("compare", "3", "4", "--db", db, "--format", "markdown", env=ENV).stdout
    md = tmp_path / "r.md"
    assert cli("report", "4", "--baseline", "3", "--format", "markdown", "-o", str(md), "--db", db,
               env=ENV).returncode == 0
    printed["report"] = md.read_text()
    printed["history"] = cli("history", "dram.copy", "--db", db, env=ENV).stdout
    history = json.loads(cli("history", "dram.copy", "--db", db, "--json", "-", env=ENV).stdout)
    assert history["cases"][0]["runs"][-1]["allowance_ln"] == pytest.approx(c["allowance_ln"])
    export = json.loads(cli("export", "4", "--format", "github-action-benchmark", "--db", db, env=ENV).stdout)
    printed["github-action-benchmark"] = export[0]["extra"]
    for where, text in printed.items():
        assert words in text, where
        assert "69.3" not in text, where


def _refs(db: str, tmp_path, how: str) -> tuple[str, str]:
    """(base, new) as a CI job names runs 4 and 5: ids, `latest`, `baseline` or JSON exports."""
    if how == "ids":
        return "4", "5"
    if how == "latest":
        return "4", "latest"
    if how == "baseline":
        assert cli("tag", "4", "baseline", "--db", db, env=ENV).returncode == 0
        return "baseline", "latest"
    paths = []
    for run in ("4", "5"):
        path = tmp_path / f"run{run}.json"
        assert cli("export", run, "-o", str(path), "--db", db, env=ENV).returncode == 0
        paths.append(str(path))
    return paths[0], paths[1]


WAYS = ["ids", "latest", "baseline", "export"]


@pytest.mark.parametrize("how", WAYS)
@pytest.mark.parametrize("factor", [10.0, 100.0])
def test_a_quiet_new_run_far_slower_than_a_contended_base_gates(tmp_path, how, factor):
    # issue 43 item 2: it was INCOMPLETE, and --allow-incomplete exited 0
    db = f"sqlite:///{tmp_path / 'k.sqlite'}"
    _store_runs(db, [(10.0, QUIET), (10.1, QUIET), (9.9, QUIET), (10.0, BUSY), (10.0 / factor, QUIET)])
    base, new = _refs(db, tmp_path, how)
    proc = cli("compare", base, new, "--db", db, "--allow-incomplete", "--format", "json", env=ENV)
    (c,) = json.loads(proc.stdout)["comparisons"]
    assert proc.returncode == 1 and c["verdict"] == "slower", c["note"]
    assert "at least as large as it looks" in c["note"]
    assert proc.stderr.strip().splitlines()[-1].startswith("FAIL: 1 case(s) slower")


@pytest.mark.parametrize("how", WAYS)
def test_allow_incomplete_never_passes_a_drop_far_beyond_plausible_contention(tmp_path, how):
    db = f"sqlite:///{tmp_path / 'k.sqlite'}"
    _store_runs(db, [(10.0, QUIET), (10.1, QUIET), (9.9, QUIET), (10.0, QUIET), (0.5, BUSY)])  # 20x slower, busy
    base, new = _refs(db, tmp_path, how)
    proc = cli("compare", base, new, "--db", db, "--allow-incomplete", "--format", "json", env=ENV)
    (c,) = json.loads(proc.stdout)["comparisons"]
    assert proc.returncode == 1 and c["verdict"] == "slower" and c["estimator"] == "fast end (p90)", c["note"]
    assert "its contention can explain" in c["note"]


@pytest.mark.parametrize("how", WAYS)
def test_a_drop_the_new_run_s_contention_can_explain_is_incomplete_and_strict_mode_holds_any(tmp_path, how):
    db = f"sqlite:///{tmp_path / 'k.sqlite'}"
    _store_runs(db, [(10.0, QUIET), (10.1, QUIET), (9.9, QUIET), (10.0, QUIET), (6.0, BUSY)])  # -40 %, busy
    base, new = _refs(db, tmp_path, how)
    proc = cli("compare", base, new, "--db", db, env=ENV)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("INCOMPLETE: 1 drop(s) beyond the noise that the new "
                                                           "run's contention can explain")
    assert cli("compare", base, new, "--db", db, "--allow-incomplete", env=ENV).returncode == 0


@pytest.mark.parametrize("how", WAYS)
def test_two_runs_beside_one_steady_neighbour_are_judged_and_strict_mode_refuses_them(tmp_path, how):
    # issue 37: the CI recipe beside a 2-process hog ended INCOMPLETE on identical code
    db = f"sqlite:///{tmp_path / 'k.sqlite'}"
    _store_runs(db, [(10.0, BUSY), (10.4, BUSY), (9.7, BUSY), (10.0, BUSY), (9.8, BUSY)])
    base, new = _refs(db, tmp_path, how)
    proc = cli("compare", base, new, "--db", db, "--format", "json", env=ENV)
    (c,) = json.loads(proc.stdout)["comparisons"]
    assert proc.returncode == 0 and c["verdict"] == "same" and c["history_runs"] == 4, c["note"]
    proc = cli("compare", base, new, "--db", db, "--require-quiet", env=ENV)
    assert proc.returncode == 0  # a change under the floor is the same, quiet or not
    _store_runs(db, [(6.0, BUSY)])  # run 6: a 40 % drop beside the same neighbour
    base, new = ("5", "6") if how != "export" else _refs_export(db, tmp_path)
    proc = cli("compare", base, new, "--db", db, "--format", "json", env=ENV)
    assert proc.returncode == 1 and json.loads(proc.stdout)["comparisons"][0]["verdict"] == "slower"
    proc = cli("compare", base, new, "--db", db, "--require-quiet", env=ENV)
    assert proc.returncode == 3 and "--require-quiet" in proc.stderr.strip().splitlines()[-1]


def _refs_export(db: str, tmp_path) -> tuple[str, str]:
    paths = []
    for run in ("5", "6"):
        path = tmp_path / f"later{run}.json"
        assert cli("export", run, "-o", str(path), "--db", db, env=ENV).returncode == 0
        paths.append(str(path))
    return paths[0], paths[1]


def test_a_fresh_database_judges_a_busy_job_on_the_noise_its_baseline_export_carries(tmp_path):
    # issue 37: a runner without a surviving database compares with a baseline export; its fresh database
    # had no earlier run, so beside a busy neighbour every identical job's drop beyond the assumed -13.9 %
    # was held back: INCOMPLETE (exit 3) job after job, although `run --repeat 3` had measured the noise
    home = f"sqlite:///{tmp_path / 'home.sqlite'}"
    _store_runs(home, [(10.0, BUSY), (12.5, BUSY), (10.0, BUSY)])  # the baseline's --repeat 3, all contended
    baseline = tmp_path / "baseline.json"
    assert cli("export", "3", "-o", str(baseline), "--db", home, env=ENV).returncode == 0
    carried = json.loads(baseline.read_text())["history"]
    assert carried == {CASE: pytest.approx([10.0 * 1.002, 12.5 * 1.002, 10.0 * 1.002])}
    for job, (gbps, status) in enumerate([(7.5, 0), (0.8, 1)]):  # -25 %: within the noise; 12.5x slower: gates
        fresh = f"sqlite:///{tmp_path / f'job{job}.sqlite'}"
        _store_runs(fresh, [(gbps, BUSY)])
        proc = cli("compare", str(baseline), "latest", "--db", fresh, "--allow-incomplete", "--format", "json",
                   env=ENV)
        (c,) = json.loads(proc.stdout)["comparisons"]
        assert proc.returncode == status and c["history_runs"] == 3 and "assumed" not in c["note"], c["note"]
        # issue 57 item 0 (was `ambiguous`, and a bare PASS without --allow-incomplete): runs 25 % apart put the
        # allowance beyond a halving, so a −25 % move is too noisy to judge here: INCOMPLETE, saying what to do
        assert c["verdict"] == ("too noisy" if status == 0 else "slower"), c["note"]
        strict = cli("compare", str(baseline), "latest", "--db", fresh, env=ENV)
        assert strict.returncode == (3 if status == 0 else 1), strict.stderr
        if status == 0:
            assert "too noisy to judge here" in strict.stderr.strip().splitlines()[-1], strict.stderr


def test_a_carried_history_counts_only_on_its_own_box_and_a_bad_one_is_refused(tmp_path):
    from kvbench.analyze.regress.carried import with_carried

    base = {"run": {"host_id": HOST, "context_id": CTX}, "history": {CASE: [10.0, 12.0, 9.0]}}
    new = {"run": {"host_id": HOST, "context_id": CTX}}
    assert with_carried({}, base, new) == {CASE: [10.0, 12.0, 9.0]}
    assert with_carried({CASE: [1.0, 2.0, 3.0, 4.0]}, base, new) == {CASE: [1.0, 2.0, 3.0, 4.0]}  # its own suffice
    other = {"run": {"host_id": "another-box", "context_id": CTX}}
    assert with_carried({}, base, other) == {} and with_carried({}, base, {"run": {"host_id": HOST,
                                                                                   "context_id": "d" * 64}}) == {}
    db = f"sqlite:///{tmp_path / 'k.sqlite'}"
    _store_runs(db, [(10.0, BUSY), (9.0, BUSY)])
    path = tmp_path / "bad.json"
    doc = json.loads(cli("export", "1", "--db", db, env=ENV).stdout)
    path.write_text(json.dumps({**doc, "history": {CASE: [10.0, "fast"]}}))
    proc = cli("compare", str(path), "2", "--db", db, env=ENV)
    assert proc.returncode == 2 and "'history'" in proc.stderr.strip().splitlines()[-1], proc.stderr
