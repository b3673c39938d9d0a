"""The steps of `kvbench accept` beyond judging a run (kvbench/cli/judge.py): measuring again what a busy
box or a too-wide interval left undecided, the judged run's inventory drift, and level 1 (inventory and
health counters only, no suite)."""

from __future__ import annotations

import time
from pathlib import Path

from kvbench.cli.common import err, existing_store, judged_documents, this_host_ids
from kvbench.errors import CheckFailed

LEVEL_1_BUDGET_S = 30.0  # what `accept --level 1` may take: the host's facts and one health window
LEVEL_SUITES = {2: "acceptance", 3: "acceptance-long"}  # what each measuring level runs by default
# A case's bound beyond its sampling (max_time_s): preparing, warming up, checking the bytes before and after
# timing. An estimate for the stated budget (a 1 GiB host copy's checks take seconds on a busy 2-core box).
CASE_OVERHEAD_S = 5.0
START_S = 60.0  # python, the database, CUDA and NVRTC where there is a GPU
HEALTH_WINDOW_S = 2.0  # seconds the GPUs' health counters are watched at level 1 (XIDs, ECC, NVLink, throttling)


def level_one_document() -> dict:
    """`accept --level 1` on this host now: its facts, and one result holding what NVML said about every
    GPU over HEALTH_WINDOW_S (no benchmark runs; nothing is stored)."""
    from kvbench.hardware import contention
    from kvbench.hardware.identity import host_id
    from kvbench.metadata import CONTENTION
    from kvbench.run.this_host import host_facts

    facts = host_facts()
    buses = [g.bus_id for g in facts.gpus if g.bus_id]
    results = []
    if buses:
        with contention.watch(buses) as seen:
            time.sleep(HEALTH_WINDOW_S)
        results.append({"bench": "gpu.health", "params": {"seconds": HEALTH_WINDOW_S}, "case": "health-window",
                        "status": "ok", "metadata": {CONTENTION: seen.record()}})
    return {"run": {"id": "level 1 (now)", "host_id": host_id(facts), "status": "complete"},
            "host": {"id": host_id(facts), "facts": facts.to_dict(), "facts_source": "run"}, "results": results}


def resample_uncertain(doc: dict, verdicts: list, rules_files: list, suite: str, db: str | None,
                        quiet: bool = False) -> tuple[dict, list, int | None]:
    """Once: the cases of ratio verdicts whose 95 % interval straddles their threshold run again into a
    run of their own (tagged resample_of), sampled until the interval is clear of it or
    RESAMPLE_BUDGET_S is spent; judged again on their new results. Returns the document,
    the verdicts and the re-sampling run (None: nothing straddled)."""
    from kvbench.analyze.accept.judge import judge
    from kvbench.analyze.accept.uncertain import RESAMPLE_BUDGET_S, resample_plan
    from kvbench.analyze.regress.contended import with_remeasured
    from kvbench.run.suite_run import RunRequest
    from kvbench.store.tags import RESAMPLE_OF

    cases, bounds = resample_plan(verdicts, doc)
    if not cases:
        return doc, verdicts, None
    err.print(f"kvbench: {len(cases)} case(s) judged a ratio whose 95 % interval straddles its threshold: "
              f"re-sampling them until it is clear of {', '.join(f'{b:g} x' for b in bounds)} "
              f"(at most {RESAMPLE_BUDGET_S:g} s each)")
    request = RunRequest(suite=suite, tags={"purpose": "acceptance", RESAMPLE_OF: str(doc["run"]["id"])}, db=db,
                         cases=tuple(cases), ratio_bounds=bounds, max_time_s=RESAMPLE_BUDGET_S)
    redo = measure_cases_again(request, db, quiet)
    doc = with_remeasured(doc, redo)
    return doc, judge(doc, rules_files), int(redo["run"]["id"])


def suite_to_measure_again(doc: dict, db: str | None, suite: str | None) -> str | None:
    """The suite `accept --run RUN --measure-again` measures the judged run's undecided cases from (`suite`,
    the --suite the user gave, where it is the run's suite, else the run's suite by name), where it may: the
    run was measured on this box (its host id now, or an older kvbench's id of it in the database) and a
    database takes the new run. None where not, after saying why on standard error in the user's terms."""
    store, run = existing_store(db), doc["run"]
    why = ("no database to store the cases measured again in" if store is None else
           f"run {run['id']} was measured on another host" if run.get("host_id") not in this_host_ids(store) else None)
    if why is None:
        found, why = _suite_of(run, suite)
        if found is not None:
            return found
    err.print(f"kvbench: --measure-again: {why}; judged as stored", markup=False, highlight=False)
    return None


def _suite_of(run: dict, given: str | None) -> tuple[str | None, str]:
    """(the suite name or file that plans `run`'s cases, "") or (None, why not, naming what the user gave)."""
    from kvbench.errors import BadInput
    from kvbench.plan.suite import load_suite

    wanted = run.get("suite")
    if not wanted:
        return None, (f"run {run['id']} was measured with --bench, not from a suite: no suite plans its cases "
                      "again (run them again with the same --bench and --set)")
    named = {}
    for candidate in dict.fromkeys(c for c in (given, wanted) if c):
        try:
            named[candidate] = load_suite(candidate)[0].name
        except BadInput as exc:
            named[candidate] = exc
            continue
        if named[candidate] == wanted:
            return candidate, ""
    if given and given != wanted:
        what = named[given]
        said = f"--suite {given} is suite '{what}'" if isinstance(what, str) else f"--suite {given}: {what}"
        return None, (f"{said}, but run {run['id']} was measured from suite '{wanted}': give that suite's "
                      f"{'name' if isinstance(named.get(wanted), str) else 'TOML file'} with --suite")
    return None, (f"run {run['id']} was measured from suite '{wanted}', which is not a suite kvbench ships: "
                  "give its TOML file with --suite")


def stored_drift(doc: dict, run_ref: str, db: str | None):
    """The judged run's inventory drift (kvbench/analyze/accept/drift.py) where it is a stored run; None for an
    export file, or where no database holds it."""
    from kvbench.analyze.accept.drift import run_drift

    if Path(run_ref).suffix == ".json" or Path(run_ref).is_file():
        return None
    store = existing_store(db)
    if store is None:
        return None
    try:
        stored = store.run(doc["run"]["id"])
    except Exception:  # noqa: BLE001 — a run this database does not hold has no stored history here
        return None
    return run_drift(store, stored["id"]) if stored.get("host_id") == doc["run"].get("host_id") else None


def remeasure_contended(doc: dict, verdicts: list, rules_files: list, suite: str, db: str | None,
                         quiet: bool = False) -> tuple[dict, list]:
    """Once: the cases a rule failed on while the box was contended run again into a run of their own
    (tagged remeasure_of), and the rules are judged on the run with their new results. `quiet`: its table
    goes to standard error (standard output holds a JSON document)."""
    from kvbench.analyze.accept.judge import judge
    from kvbench.analyze.regress.contended import contended_failures, with_remeasured
    from kvbench.run.suite_run import RunRequest
    from kvbench.store.tags import REMEASURE_OF

    cases = contended_failures(verdicts, doc)
    if not cases:
        return doc, verdicts
    err.print(f"kvbench: {len(cases)} case(s) failed a rule while the box was contended: measuring them once more")
    request = RunRequest(suite=suite, tags={"purpose": "acceptance", REMEASURE_OF: str(doc["run"]["id"])}, db=db,
                         cases=tuple(cases))
    doc = with_remeasured(doc, measure_cases_again(request, db, quiet))
    return doc, judge(doc, rules_files)


def measure_cases_again(request, db: str | None, quiet: bool) -> dict:
    """The run document of `request` measured now (a case that fails now is judged as failed)."""
    from kvbench.cli.run import run_and_show

    try:
        again = str(run_and_show(request, None, quiet=quiet))
    except CheckFailed:
        again = "latest"
    (redo,) = judged_documents([again], db)
    return redo


def level_budget(suite: str) -> tuple[int, float]:
    """(cases `suite` plans on this host, the seconds its level is given): a start-up plus, per case, its
    sampling bound (the suite's max_time_s) and CASE_OVERHEAD_S."""
    from kvbench.plan.cases import plan
    from kvbench.plan.suite import load_suite

    loaded, path, _text = load_suite(suite)
    cases = plan(loaded.bench, None, {}, source=str(path))
    settings = loaded.settings
    sampling = settings.max_time_s if settings.max_time_s is not None else settings.samples * settings.min_sample_s
    return len(cases), START_S + len(cases) * (sampling + CASE_OVERHEAD_S)


def say_level(level: int, took_s: float, budget_s: float) -> None:
    """The level's time against its stated budget, on standard error (over it: said so)."""
    err.print(f"kvbench: level {level} took {took_s:.1f} s of its {budget_s:.0f} s budget"
              + ("" if took_s <= budget_s else ": over budget"), markup=False, highlight=False)

