"""`kvbench run`, `kvbench results`, `kvbench tag`: measure into the store, read a run back, tag it."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from kvbench.cli.app import app
from kvbench.cli.common import (
    DbOption,
    JsonOption,
    PeaksOption,
    check_writable,
    documents,
    err,
    out,
    pairs,
    tag_key,
    this_host_ids,
    use_peaks,
    write_text,
)
from kvbench.errors import BadInput
from kvbench.overall import PASS, Concluded, run_overall
from kvbench.redact import redact


def write_run_json(store, run_id: int, target: str) -> None:
    from kvbench.analyze.runs import run_document

    write_text(json.dumps(run_document(store, run_id), indent=2, default=str) + "\n", target)


def run_and_show(request, json_out: str | None, repeat: int = 1, quiet: bool = False, runner=None) -> int:
    """Run `request` (suite_run.RunRequest) `repeat` times, print the last run's table (and the
    spread between the runs) ending in `N ok · N failed · N skipped (reasons: …)`, write its JSON;
    returns its run id. `runner(request, console)` replaces `run_suite` (a rank of a cluster). A signal ends the process with the shell's status for it; a failed case
    raises `Concluded` FAIL (exit 1), a run that measured nothing `Concluded` INCOMPLETE (exit 3)."""
    from kvbench.benches.describe import describe_params
    from kvbench.report.table import results_table, status_line
    from kvbench.run.interrupts import Interrupted
    from kvbench.run.suite_repeat import run_repeated
    from kvbench.run.suite_run import run_suite

    try:
        outcomes = [(runner or run_suite)(request, err)] if repeat == 1 else run_repeated(request, repeat, err)
    except Interrupted as exc:
        err.print(f"kvbench: interrupted ({exc.name}); " + (
            f"run {exc.run_id} is marked aborted and its finished results are kept" if exc.run_id is not None
            else "no run had begun, so nothing was stored"))
        raise typer.Exit(exc.exit_code) from None
    store, run_id = outcomes[-1].store, outcomes[-1].run_id
    show = err if json_out == "-" or quiet else out  # `quiet`: the caller's JSON goes to standard output
    run_row, rows = store.run(run_id), store.results(run_id)
    show.print(results_table(rows, describe_params,
                             title=f"run {run_id} · {run_row['suite'] or 'ad hoc'} · {store.url} · GB/s = 1e9 B/s"))
    show.print(status_line(rows), markup=False, highlight=False, soft_wrap=True)
    if repeat > 1:
        show_repeats(store, [o.run_id for o in outcomes], show)
    if json_out:
        write_run_json(store, run_id, json_out)
    failed = sum(o.failed for o in outcomes)
    runs = ", ".join(str(o.run_id) for o in outcomes if o.failed) if failed else str(run_id)
    overall = run_overall([r["status"] for r in rows], failed, f"run {runs}")
    if overall.word != PASS:  # 1 when a case failed, 3 when nothing was measured
        raise Concluded(overall)
    return run_id


def show_repeats(store, run_ids: list[int], show) -> None:
    from kvbench.analyze.regress.repeat import repeat_spread
    from kvbench.analyze.runs import run_document
    from kvbench.report.analysis_tables import repeat_table
    from kvbench.store.tags import BASELINE

    pooled = len(run_ids) if all(BASELINE in (store.run(i)["tags"] or {}) for i in run_ids) else 1  # analyze/regress/pooled.py
    show.print(repeat_table(repeat_spread([run_document(store, i)["results"] for i in run_ids], base_runs=pooled),
                            run_ids, pooled))


@app.command()
def run(
    suite: Annotated[str | None, typer.Option("--suite", help="suite name or TOML path (default: quick)")] = None,
    bench: Annotated[list[str] | None, typer.Option("--bench", help="run only these benchmark ids")] = None,
    set_: Annotated[list[str] | None, typer.Option("--set", help="override a parameter: key=value")] = None,
    db: DbOption = None,
    json_out: Annotated[str | None, typer.Option("--json", metavar="FILE|-",
                                                      help="write the results as JSON to FILE, or - for stdout")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="tag the run: key=value")] = None,
    samples: Annotated[int | None, typer.Option("--samples", min=5, max=10_000,
                                                      help="samples per case (default from the suite)")] = None,
    precision: Annotated[float | None, typer.Option(
        "--precision", help="sample each case until its median's 95 % confidence interval is within ± this "
        "fraction (0.01 = 1 %; default from the suite, 1 %) or --max-time runs out")] = None,
    max_time: Annotated[float | None, typer.Option(
        "--max-time", help="seconds of sampling per case short of --precision (default from the suite, else "
        "samples × min_sample_s)")] = None,
    max_cases: Annotated[int, typer.Option("--max-cases", min=1, help="refuse a selection of more cases than this")]
    = 10_000,
    repeat: Annotated[int, typer.Option("--repeat", min=1, max=100, help="run the selection N times, each in a fresh "
                                        "process, as N runs; shows the spread between them (--json: the last run)")]
    = 1,
    remeasure_s: Annotated[float | None, typer.Option(
        "--remeasure-s", help="seconds to measure the cases a busy neighbour contended once more at the end of the "
        "run, keeping the quieter result (default: a tenth of the run's time; 0: never)")] = None,
    peaks: PeaksOption = None,
) -> None:
    """Run a suite (or some benchmarks) and store every sample. Exit 0 when every case that could run here ran ok,
    1 when a case failed, 3 when nothing was measured (every case skipped)."""
    from kvbench.benches.params import coerce_text
    from kvbench.run.suite_run import RunRequest

    check_writable(json_out, "--json", db)
    use_peaks(peaks)
    if precision is not None and not 0 < precision < 1:
        hint = f"; write {precision:g}% as {precision / 100:g}" if 1 <= precision < 100 else ""
        raise BadInput(f"bad --precision {precision:g}: give a fraction between 0 and 1 (0.01 is ±1 %){hint}")
    if max_time is not None and not 0 < max_time <= 3600:
        raise BadInput(f"bad --max-time {max_time:g}: give seconds per case, above 0 and at most 3600")
    if remeasure_s is not None and not 0 <= remeasure_s <= 86_400:
        raise BadInput(f"bad --remeasure-s {remeasure_s:g}: give seconds, 0 (never) to 86400")
    request = RunRequest(suite=suite, benches=tuple(bench or ()), tags=pairs(tag, "--tag"), samples=samples, db=db,
                         precision=precision, max_time_s=max_time, remeasure_s=remeasure_s,
                         overrides={k: coerce_text(v) for k, v in pairs(set_, "--set").items()}, max_cases=max_cases)
    run_and_show(request, json_out, repeat)


@app.command()
def results(
    run_refs: Annotated[list[str] | None, typer.Argument(metavar="RUN...", help="run ids, 'latest', 'baseline' or "
                                                         "JSON exports (several: --format csv or json)")] = None,
    fmt: Annotated[str, typer.Option("--format", help="table | json | csv (json: as --json -) | nvbandwidth (its "
                                                      "testcases' matrices) | nvbandwidth-json (its --json shape)")
                   ] = "table",
    json_out: JsonOption = None,
    db: DbOption = None,
) -> None:
    """Show a stored run (or an exported one); --format csv takes several, one row per result with its
    run's start, host, suite and tags (a time series); --format json several as {"runs": [...]}."""
    from kvbench.benches.describe import describe_params
    from kvbench.report.table import results_csv, results_table, run_csv_fields
    from kvbench.store.records import result_row

    if fmt not in ("table", "json", "csv", "nvbandwidth", "nvbandwidth-json"):
        raise BadInput(f"bad --format '{fmt}': choose table, json, csv, nvbandwidth or nvbandwidth-json")
    if fmt == "json":
        if json_out not in (None, "-"):
            raise BadInput("give --format json (standard output) or --json FILE, not both")
        fmt, json_out = "table", "-"
    if fmt == "csv" and json_out:
        raise BadInput("--json writes one run's document; --format csv cannot be combined with it")
    refs = run_refs or ["latest"]
    if len(refs) > 1 and not (fmt == "csv" or fmt == "table" and json_out):
        raise BadInput(f"several runs ({' '.join(refs)}) need --format csv or json; {fmt} shows one run")
    check_writable(json_out, "--json", db, refs)
    docs = documents(refs, db)
    if len(docs) > 1 and fmt != "csv":  # one document of several runs, each as `results RUN --format json` writes it
        from kvbench.store.records import FORMAT_VERSION

        write_text(json.dumps({"format_version": FORMAT_VERSION, "runs": docs}, indent=2, default=str) + "\n", json_out)
        return
    if fmt == "csv":
        sys.stdout.write(results_csv([{**result_row(r), **run_csv_fields(d["run"], d.get("host"))}
                                      for d in docs for r in d["results"]], describe_params))
        return
    (doc,) = docs
    run = doc["run"]
    if fmt.startswith("nvbandwidth"):
        if fmt == "nvbandwidth" and json_out:
            raise BadInput("--json writes kvbench's document; for nvbandwidth's JSON shape use --format nvbandwidth-json")
        _nvbandwidth(doc, fmt, json_out)
        return
    if json_out:
        write_text(json.dumps(doc, indent=2, default=str) + "\n", json_out)
    if json_out != "-":
        out.print(results_table([result_row(r) for r in doc["results"]], describe_params,
                                title=f"run {run['id']} · {run.get('suite') or 'ad hoc'} · {run['status']} · started "
                                f"{run.get('started_at') or '?'}"))


def _nvbandwidth(doc: dict, fmt: str, json_out: str | None) -> None:
    """A run's PCIe and GPU-to-GPU cells as nvbandwidth's testcases: text, or its JSON (to --json FILE or stdout)."""
    from kvbench.analyze.links.nvbandwidth_shape import nvbandwidth_cases, nvbandwidth_json

    gpus = len(((doc.get("host") or {}).get("facts") or {}).get("gpus") or []) or None
    cases = nvbandwidth_cases(doc["results"], gpus)
    if fmt == "nvbandwidth-json":
        write_text(json.dumps(nvbandwidth_json(cases, doc["run"], doc.get("host"), doc.get("context")), indent=2) + "\n", json_out or "-")
        return
    from kvbench.report.nvbandwidth_text import nvbandwidth_text

    sys.stdout.write(nvbandwidth_text(cases, doc["run"]["id"]))


@app.command()
def tag(
    run_ref: Annotated[str, typer.Argument(metavar="RUN", help="run id, 'latest', 'baseline' or cluster:ID (every "
                                           "rank's run of one launch)")],
    key: Annotated[str, typer.Argument(help="tag name, e.g. baseline")],
    value: Annotated[str, typer.Argument(help="tag value")] = "1",
    remove: Annotated[bool, typer.Option("--remove", help="remove the tag from the run instead")] = False,
    db: DbOption = None,
) -> None:
    """Tag a stored run, or remove a tag. The run tagged `baseline` last (this host's where it has one)
    is what `compare baseline` and `report --baseline baseline` compare with."""
    from kvbench.run.lifecycle import reap
    from kvbench.store import open_store

    key = tag_key(key)
    store = open_store(db, existing=True)
    mine = this_host_ids(store)
    reap(store, mine)  # a run whose owner is gone is crashed before anyone tags it
    from kvbench.analyze.cluster_runs import cluster_id_of, cluster_run_ids

    cluster = cluster_id_of(run_ref)
    if cluster is None:
        run_id = store.resolve_run(run_ref, mine)
        cluster = store.cluster_of(run_id) if run_ref in ("latest", "baseline") else None
    run_ids = cluster_run_ids(store, cluster) if cluster else [run_id]  # a cluster run: each rank's run
    named = f"cluster:{cluster}" if cluster else f"run {run_id}"
    if key in ("cluster", "cluster_rank", "cluster_world"):
        raise BadInput(f"tag '{key}' ties a launch's runs together (python -m kvbench.cluster.launch sets it): choose "
                       "another name")
    if remove:
        if not [r for r in run_ids if store.remove_tag(r, key)]:
            raise BadInput(f"{named} has no tag '{key}'")
        out.print(f"{named}: {key} removed", markup=False, emoji=False, highlight=False)
        return
    value = redact(value)  # a URL typed into the wrong slot is stored without its password
    for one in run_ids:
        store.set_tag(one, key, value)
    out.print(f"{named}: {key}={value}", markup=False, emoji=False, highlight=False)
