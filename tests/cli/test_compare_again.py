"""`compare --measure-again` (kvbench/cli/compare_again.py): a case slower while the box was contended is
measured once more, into a run of its own that `latest` never names, and judged on the new result.

The runs are real (tests/fixtures/tiny.toml); what the test plants in the database is the contention record
and, where a drop must be real, a factor of a hundred between the job's run and those before it: beyond the
halving any noisy history allows and the 8× any contention can explain (kvbench/analyze/regress/contended.py), so no
verdict here depends on how fast or how busy the box is when the case is measured again."""

import json

import sqlalchemy as sa

from kvbench.store import open_store
from tests.inproc import run_in_process as cli

TINY = "tests/fixtures/tiny.toml"
BUSY = {"contended": ["other processes used 60% of the CPUs"], "faults": [], "host": {"others_cpu_fraction": 0.6}}


def _plant(db: str, scale: dict[int, float]) -> None:
    """Every result of every run measured beside the same neighbour (60 % of the CPUs); the rates of each
    run in `scale` multiplied by its factor (its times and samples divided by it)."""
    engine = sa.create_engine(db)
    with engine.begin() as conn:
        for row in conn.execute(sa.text("SELECT id, run_id, extra FROM result")).all():
            extra = json.loads(row.extra) if isinstance(row.extra, str) else dict(row.extra)
            conn.execute(sa.text("UPDATE result SET extra = :e WHERE id = :i"),
                         {"e": json.dumps({**extra, "contention": BUSY}), "i": row.id})
            if (f := scale.get(row.run_id)) is not None:
                conn.execute(sa.text("UPDATE result SET gbps_median = gbps_median * :f, gbps_p10 = gbps_p10 * :f, "
                                     "gbps_p90 = gbps_p90 * :f, median_s = median_s / :f, p10_s = p10_s / :f, "
                                     "p90_s = p90_s / :f, mean_s = mean_s / :f, min_s = min_s / :f, "
                                     "max_s = max_s / :f, stdev_s = stdev_s / :f WHERE id = :i"), {"f": f, "i": row.id})
                conn.execute(sa.text("UPDATE sample SET seconds = seconds / :f WHERE result_id = :i"),
                             {"f": f, "i": row.id})
    engine.dispose()


def _comparisons(proc) -> list[dict]:
    return [c for c in json.loads(proc.stdout)["comparisons"] if c["verdict"] != "not-ok"]


def test_a_drop_measured_while_contended_is_measured_again_into_a_run_latest_never_names(stored_runs):
    db = stored_runs(TINY, 5)
    _plant(db, {5: 0.01})  # the job's run: a hundredth of what this box measured, beside the neighbour every
    # run had. Not a quarter: on a busy CI box one run of a case measured 2.2× the run before, and a quarter of
    # that is within the halving any noisy history allows (kvbench/analyze/regress/noise.py MAX_ALLOWANCE)
    first = cli("compare", "4", "5", "--db", db, "--format", "json")
    assert first.returncode == 1 and {c["verdict"] for c in _comparisons(first)} == {"slower"}, first.stdout
    proc = cli("compare", "4", "latest", "--measure-again", "--suite", TINY, "--db", db, "--format", "json")
    assert "2 case(s) slower while the box was contended: measuring them once more" in proc.stderr, proc.stderr
    store = open_store(db)
    again = store.runs()[-1]
    assert again["id"] == 6 and again["tags"]["remeasure_of"] == "5" and store.resolve_run("latest") == 5
    measured = {r["case_hash"]: r["gbps_median"] for r in store.results(6)}
    store.dispose()
    judged = _comparisons(proc)
    assert {c["case"] for c in judged} == set(measured)  # exactly the cases found slower, each judged on its new rate
    for c in judged:
        assert c["new_gbps"] == measured[c["case"]]
        assert "measured again in run 6: the first measurement, while contended, was slower" in c["note"], c["note"]


def test_a_real_drop_is_there_again_and_gates(stored_runs):
    db = stored_runs(TINY, 5)
    _plant(db, {1: 100.0, 2: 100.0, 3: 100.0, 4: 100.0})  # the runs before a hundred times what this box measures:
    # the job's run, and any measurement of it now, is slower
    proc = cli("compare", "4", "5", "--measure-again", "--suite", TINY, "--db", db, "--format", "json")
    judged = _comparisons(proc)
    assert proc.returncode == 1 and {c["verdict"] for c in judged} == {"slower"}, proc.stdout
    assert all("measured again in run 6" in c["note"] for c in judged)


def test_a_run_of_another_host_is_judged_as_stored_and_says_why(stored_runs):
    db = stored_runs(TINY, 5)
    _plant(db, {1: 100.0, 2: 100.0, 3: 100.0, 4: 100.0})
    proc = cli("compare", "4", "5", "--measure-again", "--suite", TINY, "--db", db, "--format", "json",
               env={"KVBENCH_HOST_ID": "another-box"})  # this box is not the one that measured run 5
    assert proc.returncode == 1 and "--measure-again: run 5 was measured on another host; judged as stored" \
        in proc.stderr, proc.stderr
    assert len(open_store(db).runs()) == 5


def test_another_suite_given_is_named_as_what_it_is_not_asked_for_again(stored_runs):
    """Issue 57 item 9: --suite was given, and it is another suite: say which, never "give its file with --suite"."""
    db = stored_runs(TINY, 5)
    _plant(db, {1: 100.0, 2: 100.0, 3: 100.0, 4: 100.0})
    proc = cli("compare", "4", "5", "--measure-again", "--suite", "quick", "--db", db, "--format", "json")
    assert proc.returncode == 1, proc.stderr
    assert ("--measure-again: --suite quick is suite 'quick', but run 5 was measured from suite 'tiny': give that "
            "suite's TOML file with --suite; judged as stored") in proc.stderr, proc.stderr
    assert "give its file" not in proc.stderr and len(open_store(db).runs()) == 5


def test_a_run_measured_without_a_suite_says_so_not_suite_none(stored_runs):
    db = stored_runs(TINY, 5)
    _plant(db, {1: 100.0, 2: 100.0, 3: 100.0, 4: 100.0})
    engine = sa.create_engine(db)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE run SET suite = NULL WHERE id = 5"))
    engine.dispose()
    proc = cli("compare", "4", "5", "--measure-again", "--db", db, "--format", "json")
    assert "run 5 was measured with --bench, not from a suite" in proc.stderr and "'None'" not in proc.stderr, \
        proc.stderr


def test_accept_level_1_with_measure_again_names_what_is_missing():
    proc = cli("accept", "--level", "1", "--measure-again")
    assert proc.returncode == 2 and "level 1 (now)" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "kvbench: error: --measure-again measures a stored run's cases again: give the run with --run RUN "
        "(--level 1 measures no case)"], proc.stderr
