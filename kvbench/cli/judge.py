"""`kvbench accept`, `kvbench compare`: verdicts a CI gates on (exit 1 on a FAIL or a regression, 3 when an
acceptance is INCOMPLETE)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from kvbench.cli.app import app
from kvbench.cli.common import (
    DbOption,
    JsonOption,
    PeaksOption,
    check_writable,
    conclude,
    err,
    fraction,
    history_store,
    judged_documents,
    out,
    this_host_ids,
    use_peaks,
    write_json,
    write_text,
)
from kvbench.errors import BadInput
from kvbench.overall import Concluded


@app.command()
def accept(
    suite: Annotated[str | None, typer.Option(help="suite to run (default: acceptance)")] = None,
    rules: Annotated[str | None, typer.Option(help="rules TOML (default: suites/rules matching this host)")] = None,
    profile: Annotated[str | None, typer.Option(help="host profile TOML: the inventory this server must have "
                                                     "(default: $KVBENCH_PROFILE; kvbench host profile writes one)")]
    = None,
    allow_incomplete: Annotated[bool, typer.Option("--allow-incomplete", help="exit 0, not 3, when INCOMPLETE")]
    = False,
    junit: Annotated[str | None, typer.Option(help="write JUnit XML here")] = None,
    json_out: JsonOption = None,
    run_ref: Annotated[str | None, typer.Option("--run", help="judge a stored run (id, latest, baseline) or a JSON "
                                                             "export instead of running the suite")] = None,
    db: DbOption = None,
    peaks: PeaksOption = None,
    health: Annotated[str | None, typer.Option(metavar="FILE", help="GPU health thresholds TOML (default: $KVBENCH_HEALTH, else "
                                                    "suites/rules/health/gpu.toml)")] = None,
    measure_again: Annotated[bool, typer.Option("--measure-again", help="with --run, where the run is this host's: "
                                                "measure again, into a run of its own, what a busy box or a too-wide "
                                                "interval left undecided, as accept without --run does")] = False,
    level: Annotated[int, typer.Option(min=1, max=3, help="1: inventory and health counters only (no suite; within "
                                                          "30 s); 2: the acceptance suite; 3: the acceptance suite "
                                                          "and the long sweeps (suite acceptance-long); 2 and 3 "
                                                          "state their budget before they start")] = 2,
) -> None:
    """Run the acceptance suite and judge it against the rules (and the host profile's inventory): PASS / FAIL /
    SKIP per rule, then one overall verdict as the last line. Exit 0 PASS, 1 FAIL, 3 INCOMPLETE (a rule this
    host should judge was skipped, or nothing was judged)."""
    from kvbench.analyze.accept.health import health_path, load_health
    from kvbench.analyze.accept.judge import judge, load_rules, rules_for_host
    from kvbench.analyze.accept.junit import junit_xml
    from kvbench.analyze.accept.pipeline import acceptance_verdicts
    from kvbench.analyze.accept.profile import gpus_to_match, load_profile, profile_path
    from kvbench.analyze.accept.verdict import accept_overall, expected_here
    from kvbench.cli.accept_steps import (
        LEVEL_SUITES,
        level_budget,
        level_one_document,
        remeasure_contended,
        resample_uncertain,
        say_level,
        stored_drift,
        suite_to_measure_again,
    )
    from kvbench.cli.run import run_and_show
    from kvbench.report.drift import drift_summary
    from kvbench.report.table import verdicts_table
    from kvbench.run.suite_run import RunRequest

    started = time.monotonic()
    given_suite, suite = suite, suite or LEVEL_SUITES[2]
    if measure_again and run_ref is None and level == 1:
        raise BadInput("--measure-again measures a stored run's cases again: give the run with --run RUN "
                       "(--level 1 measures no case)")
    use_peaks(peaks)
    rules_files = [load_rules(Path(rules))] if rules else None  # bad rules fail before anything runs
    health_checks = load_health(health_path(health))
    wanted = profile_path(profile)
    host_profile = load_profile(wanted) if wanted else None
    check_writable(junit, "--junit", db, [run_ref] if run_ref else [])
    check_writable(json_out, "--json", db, [run_ref] if run_ref else [])
    measured_here = run_ref is None and level >= 2
    budget_s = None
    if measured_here:
        suite = LEVEL_SUITES[3] if level == 3 and suite == LEVEL_SUITES[2] else suite
        planned, budget_s = level_budget(suite)
        err.print(f"kvbench: level {level}: suite {suite}, {planned} case(s) planned on this host, budget {budget_s:.0f} s",
                  markup=False, highlight=False)
        try:
            run_ref = str(run_and_show(RunRequest(suite=suite, tags={"purpose": "acceptance"}, db=db), None,
                                       quiet=json_out == "-"))  # --json -: standard output holds the JSON alone
        except Concluded:  # still judged and written out: its failed cases fail it (accept_overall)
            run_ref = "latest"
    (doc,) = judged_documents([run_ref], db) if run_ref is not None else (level_one_document(),)
    facts = (doc.get("host") or {}).get("facts")
    drift = stored_drift(doc, run_ref, db) if run_ref is not None else None
    if level == 1:  # inventory and health counters only: no rule of the suite is judged
        rules_files = []
    rules_files = rules_files if rules_files is not None else rules_for_host(gpus_to_match(facts, host_profile))
    verdicts = judge(doc, rules_files)
    resampled_in = None
    if measure_again and not measured_here and (again := suite_to_measure_again(doc, db, given_suite)):
        measured_here, suite = True, again  # the stored run's cases, from the suite that planned them
    if measured_here:
        doc, verdicts = remeasure_contended(doc, verdicts, rules_files, suite, db, quiet=json_out == "-")
        doc, verdicts, resampled_in = resample_uncertain(doc, verdicts, rules_files, suite, db, quiet=json_out == "-")
    verdicts = acceptance_verdicts(doc, rules_files, host_profile, health_checks, drift, resampled_in, verdicts)
    # the run's own failed cases and status count however it reached here (run now, id, latest, export)
    overall = accept_overall(verdicts, expected_here(facts, host_profile), runs=[doc])
    if json_out:
        from kvbench.report.json_docs import accept_doc

        write_json({**accept_doc(doc, verdicts, overall), "drift": drift.to_dict() if drift else None,
                    "peaks_file": doc.get("peaks_file")}, json_out)
    if json_out != "-":
        out.print(verdicts_table(verdicts, f"acceptance of run {doc['run']['id']}"))
    if doc.get("peaks_file"):
        err.print(f"kvbench: peaks from {doc['peaks_file']} where it gives them", markup=False, highlight=False,
                  soft_wrap=True)
    if drift is not None and (line := drift_summary(drift)):
        err.print(f"kvbench: {line}", markup=False, highlight=False, soft_wrap=True)
    if junit:
        write_text(junit_xml(verdicts, doc, overall=overall), junit)
    if level == 1 or budget_s is not None:
        from kvbench.cli.accept_steps import LEVEL_1_BUDGET_S

        say_level(level, time.monotonic() - started, LEVEL_1_BUDGET_S if level == 1 else budget_s)
    conclude(overall, allow_incomplete)


@app.command()
def compare(
    base: Annotated[str, typer.Argument(help="run id, 'latest', 'baseline', cluster:ID, or a JSON export")],
    new: Annotated[str, typer.Argument(help="run id, 'latest', 'baseline', cluster:ID, or a JSON export")] = "latest",
    threshold: Annotated[str, typer.Option(help="practical floor for a regression, e.g. 5%")] = "5%",
    fmt: Annotated[str, typer.Option("--format", help="table | markdown | json (json: as --json -)")] = "table",
    cross_host: Annotated[bool, typer.Option("--cross-host", help="allow runs of different hosts or contexts")] = False,
    allow_incomplete: Annotated[bool, typer.Option("--allow-incomplete", help="exit 0, not 3, when INCOMPLETE")] = False,
    require_quiet: Annotated[bool, typer.Option("--require-quiet", help="also hold back a change a contended side "
                                                "could have faked (within 8×): INCOMPLETE (dedicated runners)")] = False,
    measure_again: Annotated[bool, typer.Option("--measure-again", help="where NEW is this host's stored run: measure "
                                                "each case slower while contended, or with a drop within the noise, "
                                                "once more, then judge")] = False,
    suite: Annotated[str | None, typer.Option(help="with --measure-again: the suite NEW's cases come from, where it "
                                              "was a TOML file (default: NEW's suite by name)")] = None,
    json_out: JsonOption = None,
    db: DbOption = None,
    peaks: PeaksOption = None,
) -> None:
    """Each case from BASE to NEW: same, slower, faster or ambiguous, weighed against its between-run noise.
    Exit 1 on a case slower, failed, missing, or ok in BASE and skipped in NEW; 3 (INCOMPLETE) when nothing
    gates but a drop is one the new run's contention can explain (with --require-quiet: any drop a contended
    new run could have faked), a drop beyond the threshold stays within the noise (ambiguous), or a case is
    too noisy to judge (its runs vary beyond a halving): PASS only where a drop would have been seen."""
    from kvbench.analyze.regress.carried import with_carried
    from kvbench.analyze.regress.compare import case_history, compare_runs, suite_note
    from kvbench.analyze.regress.pooled import pooled_base
    from kvbench.benches.describe import describe_params
    from kvbench.cli.compare_again import measure_contended_drops_again
    from kvbench.report.table import comparisons_markdown, comparisons_table

    if fmt not in ("table", "markdown", "json"):
        raise BadInput(f"bad --format '{fmt}': choose table, markdown or json")
    if fmt == "json":
        if json_out not in (None, "-"):
            raise BadInput("give --format json (standard output) or --json FILE, not both")
        fmt, json_out = "table", "-"
    floor = fraction(threshold, "--threshold")
    use_peaks(peaks)
    check_writable(json_out, "--json", db, [base, new])
    base_doc, new_doc = judged_documents([base, new], db)
    store = history_store(db, base, new)  # the history and this box's ids, where a database holds them
    links = _cluster_pair(base_doc, new_doc)
    if links:
        from kvbench.analyze.links.link_compare import compare_links, link_history

        comparisons = compare_links(base_doc, new_doc, floor, link_history(store, new_doc), require_quiet)
    else:
        history = with_carried(case_history(store, new_doc), base_doc, new_doc)  # a baseline export's, if needed
        base_doc = pooled_base(store, base_doc, new_doc)  # a --repeat baseline: the median of its runs
        ids = this_host_ids(store) if store is not None else []
        judge_new = lambda doc: compare_runs(base_doc, doc, floor, cross_host, history, ids, require_quiet)
        comparisons = judge_new(new_doc)
        if measure_again and not require_quiet:  # compare_again.py: a neighbour's burst is not a regression
            new_doc, comparisons = measure_contended_drops_again(base_doc, new_doc, comparisons, db, judge_new,
                                                                 suite, quiet=json_out == "-")
    what = "link" if links else "case"
    title = (f"{_named(base_doc)} → {_named(new_doc)} (slower or faster: ranges apart and the change "
             f"beyond {floor:.0%} and beyond the {what}'s allowance; judged on the fast end where contention could "
             "fake it)")
    if json_out:
        write_json({"base": base_doc["run"]["id"], "new": new_doc["run"]["id"], "threshold": floor,
                    "comparisons": [c.to_dict() for c in comparisons]}, json_out)
    if json_out != "-" and fmt == "markdown":
        sys.stdout.write(comparisons_markdown(comparisons, title, describe_params))
    elif json_out != "-":
        out.print(comparisons_table(comparisons, title, describe_params))
    for doc in (base_doc, new_doc):
        if doc["run"].get("partial"):
            err.print(f"kvbench: note: run {doc['run']['id']} is partial: {doc['run']['partial']}")
    if note := suite_note(base_doc, new_doc, comparisons):
        err.print(f"kvbench: note: {note}")
    from kvbench.analyze.regress.outcome import compare_overall

    failed_line = held_named = None
    if links:  # the links by name, and the hosts most of them share
        from kvbench.analyze.links.link_compare import slow_links_line

        failed_line = slow_links_line(comparisons, base_doc["run"]["id"])
        held_named = f": {slow_links_line(comparisons, base_doc['run']['id'], held=True)}"
    conclude(compare_overall(comparisons, base_doc["run"]["id"], new_doc["run"]["id"], what, require_quiet,
                             held_named or "", failed_line), allow_incomplete)


def _named(doc: dict) -> str:
    run_id = doc["run"]["id"]
    return str(run_id) if isinstance(run_id, str) and run_id.startswith("cluster:") else f"run {run_id}"


def _cluster_pair(base: dict, new: dict) -> bool:
    """True when both are cluster runs (compared link by link); one cluster run against one run is refused."""
    from kvbench.analyze.cluster_runs import is_cluster_document

    kinds = (is_cluster_document(base), is_cluster_document(new))
    if kinds[0] != kinds[1]:
        one, other = (base, new) if kinds[0] else (new, base)
        raise BadInput(f"{one['run']['id']} is a cluster run and run {other['run']['id']} is not: compare two "
                       "cluster runs (link by link) or two runs (case by case)")
    return kinds[0]
