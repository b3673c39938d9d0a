"""The `kvbench` command: thin; every decision lives in the packages it calls."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from kvbench import __version__
from kvbench.errors import BadInput, CheckFailed
from kvbench.units import format_gbps

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Measure every path KV-cache bytes travel. Rates in decimal GB/s (1 GB = 1e9 B).")
crosscheck_app = typer.Typer(no_args_is_help=True, help="Run kvbench next to a peer tool and print both with the ratio.")
app.add_typer(crosscheck_app, name="crosscheck")
# Piped output keeps whole rows: 80 columns would fold every parameter list.
out = Console(width=None if sys.stdout.isatty() else 200)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 200)

DbOption = Annotated[str | None, typer.Option("--db", help="SQLAlchemy URL; default $KVBENCH_DB or sqlite:///results/kvbench.sqlite")]


def describe_params(bench_id: str, params: dict[str, Any], skip_defaults: bool = True) -> str:
    """Parameters as `size=256MiB threads=2`, leaving out those at their default."""
    from kvbench.benches.params import format_params
    from kvbench.benches.registry import all_benches

    bench = all_benches().get(bench_id)
    return format_params(params, bench.params if bench else None, skip_defaults=skip_defaults) or "(defaults)"


def _pairs(items: list[str] | None, option: str) -> dict[str, str]:
    result = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise BadInput(f"bad {option} '{item}': expected key=value")
        result[key.strip()] = value.strip()
    return result


@app.command()
def info(as_json: Annotated[bool, typer.Option("--json", help="print the facts as JSON")] = False,
         db: Annotated[str | None, typer.Option(help="results database whose stored GPU results for this host are "
                                                      "checked too (default: the embedded one, if it exists)")] = None,
         ) -> None:
    """Host facts (CPU, NUMA, PCIe links, GPUs, NICs, NVMe, DRAM), the spec peaks of each path, and
    what looks wrong: a downtrained link under load, far-NUMA host memory, PCIe replays in a run."""
    from kvbench.analyze.host_flags import flags_from_store
    from kvbench.hardware import fingerprint
    from kvbench.report.info import info_document, render_info

    facts = fingerprint.collect_facts()
    store = _existing_store(db)
    stored = flags_from_store(store, fingerprint.host_id(facts)) if store else []
    doc = info_document(facts, os.sched_getaffinity(0), stored)
    if as_json:
        out.print_json(json.dumps(doc, default=str))
    else:
        render_info(out, doc)


def _existing_store(db: str | None):
    """The store at `db`; for the default embedded file, None when no run has created it yet
    (`info` must not leave a database behind)."""
    from kvbench.store.database import DEFAULT_PATH, default_url, open_store

    if db is None and default_url() == f"sqlite:///{DEFAULT_PATH}" and not DEFAULT_PATH.exists():
        return None
    return open_store(db)


@app.command("list")
def list_cmd() -> None:
    """Every benchmark, suite, executor and memory kind, with whether it can run here and why not."""
    from kvbench.benches.registry import all_benches
    from kvbench.executors.registry import all_executors
    from kvbench.memory.kinds import memory_kinds
    from kvbench.plan.suite import load_suite, suite_names

    def avail(reason: str | None) -> str:
        return "[green]available[/]" if not reason else f"[yellow]unavailable — {reason}[/]"

    table = Table(title="benchmarks", title_justify="left")
    for col in ("id", "description", "parameters (default)", "here"):
        table.add_column(col, overflow="fold")
    for bench_id, bench in all_benches().items():
        defaults = {n: p.parse(n, p.default) for n, p in bench.params.items()}
        table.add_row(bench_id, bench.description, describe_params(bench_id, defaults, skip_defaults=False), avail(bench.unavailable_reason()))
    out.print(table)
    table = Table(title="executors", title_justify="left")
    for col in ("name", "description", "here"):
        table.add_column(col, overflow="fold")
    for name, ex in all_executors().items():
        table.add_row(name, ex.description, avail(ex.unavailable_reason()))
    out.print(table)
    table = Table(title="memory kinds", title_justify="left")
    for col in ("kind", "description", "here"):
        table.add_column(col, overflow="fold")
    for name, kind in memory_kinds().items():
        table.add_row(name, kind.description, avail(kind.unavailable_reason()))
    out.print(table)
    table = Table(title="suites", title_justify="left")
    for col in ("name", "description", "benchmarks"):
        table.add_column(col, overflow="fold")
    for name in suite_names():
        suite, _path, _hash = load_suite(name)
        table.add_row(name, suite.description, ", ".join(dict.fromkeys(b.id for b in suite.bench)))
    out.print(table)


@app.command()
def run(
    suite: Annotated[str | None, typer.Option("--suite", help="suite name or TOML path (default: quick)")] = None,
    bench: Annotated[list[str] | None, typer.Option("--bench", help="run only these benchmark ids")] = None,
    set_: Annotated[list[str] | None, typer.Option("--set", help="override a parameter: key=value")] = None,
    db: DbOption = None,
    json_out: Annotated[str | None, typer.Option("--json", help="write the results as JSON to FILE, or - for stdout")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="tag the run: key=value")] = None,
    samples: Annotated[int | None, typer.Option("--samples", min=5, help="samples per case (default from the suite)")] = None,
) -> None:
    """Run a suite (or some benchmarks) and store every sample."""
    from kvbench.benches.params import coerce_text
    from kvbench.hardware import fingerprint
    from kvbench.interrupts import Interrupted, signals_end_runs
    from kvbench.plan.cases import plan
    from kvbench.plan.suite import BenchSweep, SuiteSettings, load_suite
    from kvbench.report.progress import RunProgress
    from kvbench.report.table import results_table
    from kvbench.runner import RunInfo, execute
    from kvbench.store.database import open_store

    overrides = {k: coerce_text(v) for k, v in _pairs(set_, "--set").items()}
    tags = _pairs(tag, "--tag")
    if suite is None and bench:
        sweeps, settings, info = [BenchSweep(id=b) for b in dict.fromkeys(bench)], SuiteSettings(), RunInfo(tags=tags)
        cases = plan(sweeps, None, overrides)
    else:
        loaded, path, digest = load_suite(suite or "quick")
        sweeps, settings, info = loaded.bench, loaded.settings, RunInfo(loaded.name, digest, tags)
        cases = plan(sweeps, bench, overrides)
    engine_settings = settings.engine_settings()
    if samples:
        engine_settings = dataclasses.replace(engine_settings, samples=samples)
    if not cases:
        raise BadInput("the selection has no cases to run")
    store = open_store(db)
    facts = fingerprint.collect_facts()
    show = err if json_out == "-" else out
    try:
        with signals_end_runs(), RunProgress(err, len(cases), describe_params) as progress:
            run_id = execute(cases, store, facts, engine_settings, info, on_result=progress.done,
                             on_start=progress.start)
    except Interrupted as exc:
        err.print(f"kvbench: interrupted ({exc.name}); the run is marked aborted and its finished results are kept")
        raise typer.Exit(exc.exit_code) from None
    rows = store.results(run_id)
    show.print(results_table(rows, describe_params, title=f"run {run_id} · {info.suite or 'ad hoc'} · {store.url} · GB/s = 1e9 B/s"))
    if json_out:
        _write_json(store, run_id, json_out)
    if any(r["status"] == "failed" for r in rows):
        raise CheckFailed(f"run {run_id}: {sum(r['status'] == 'failed' for r in rows)} case(s) failed")


def _write_text(text: str, target: str) -> None:
    """`text` to standard output for `-`, else to the file `target` (said on stderr)."""
    if target == "-":
        sys.stdout.write(text)
    else:
        Path(target).write_text(text)
        err.print(f"wrote {target}")


def _write_json(store, run_id: int, target: str) -> None:
    from kvbench.analyze.runs import run_document

    _write_text(json.dumps(run_document(store, run_id), indent=2, default=str) + "\n", target)


@app.command()
def results(
    run_ref: Annotated[str, typer.Argument(metavar="RUN", help="run id or 'latest'")] = "latest",
    fmt: Annotated[str, typer.Option("--format", help="table | json | csv")] = "table",
    db: DbOption = None,
) -> None:
    """Show a stored run."""
    from kvbench.report.table import results_csv, results_table
    from kvbench.store.database import open_store

    if fmt not in ("table", "json", "csv"):
        raise BadInput(f"bad --format '{fmt}': choose table, json or csv")
    store = open_store(db)
    run_id = store.resolve_run(run_ref)
    rows = store.results(run_id)
    if fmt == "json":
        _write_json(store, run_id, "-")
    elif fmt == "csv":
        sys.stdout.write(results_csv([{**r, "run_id": run_id} for r in rows], describe_params))
    else:
        run_row = store.run(run_id)
        out.print(results_table(rows, describe_params,
                                title=f"run {run_id} · {run_row['suite'] or 'ad hoc'} · {run_row['status']} · started {run_row['started_at']:%Y-%m-%d %H:%M}"))


@app.command()
def fit(
    run_ref: Annotated[str, typer.Argument(metavar="RUN", help="run id or 'latest'")] = "latest",
    db: DbOption = None,
) -> None:
    """Per-fragment cost α (µs) and streaming bandwidth β (GB/s) of each KV strategy over a block-size sweep."""
    from kvbench.analyze.fit import fit_results
    from kvbench.store.database import open_store

    store = open_store(db)
    run_id = store.resolve_run(run_ref)
    fits = fit_results(store.results(run_id))
    if not fits:
        raise BadInput(f"run {run_id} has no kv.restore / kv.offload results to fit")
    table = Table(title=f"run {run_id}: time = fragments × α + bytes / β", title_justify="left")
    for col in ("benchmark", "series", "α µs/fragment", "β GB/s", "R²", "points"):
        table.add_column(col, overflow="fold")
    for params, result in fits:
        bench = params.pop("bench")
        series = describe_params(bench, params)
        if result is None:
            table.add_row(bench, series, "-", "-", "-", "-", end_section=False)
            continue
        table.add_row(bench, series, f"{result.alpha_us:.3f}",
                      f"{result.beta_gbps:.1f}" if result.beta_gbps else "∞", f"{result.r2:.3f}", str(result.points))
    out.print(table)
    out.print("'-': fewer than 3 block sizes, or fragments grew in proportion to bytes — sweep block_tokens to fit")


@app.command("plan")
def plan_cmd(
    model: Annotated[str, typer.Option(help="model preset or config.json path")],
    tokens: Annotated[int, typer.Option(min=1, help="tokens to restore")],
    tp: Annotated[int, typer.Option(min=1, help="tensor-parallel degree")] = 1,
    dtype: Annotated[str, typer.Option(help="bf16 | fp16 | fp8")] = "bf16",
    block_tokens: Annotated[int, typer.Option("--block-tokens", min=1, help="tokens per KV block")] = 16,
    db: DbOption = None,
) -> None:
    """Restore time of a model's KV from each tier measured on this host: at the spec peak and as measured."""
    from kvbench.analyze.restore_plan import restore_plan
    from kvbench.hardware import fingerprint
    from kvbench.kv.geometry import get_model
    from kvbench.store.database import open_store

    geometry = get_model(model)
    store = open_store(db)
    host_id = fingerprint.host_id(fingerprint.collect_facts())
    plans = restore_plan(geometry, tokens, dtype, tp, block_tokens, store.host_results(host_id, "kv.restore"))
    if not plans:
        raise BadInput(f"no kv.restore results for this host in {store.url}; run 'kvbench run --suite kv-restore' first")
    fragment = block_tokens * geometry.unit_bytes_per_token(dtype, tp)
    table = Table(title=f"restore {tokens} tokens of {geometry.name} ({dtype}, tp={tp}, {block_tokens}-token blocks, "
                        f"{fragment} B fragments)", title_justify="left")
    for col in ("tier", "KV bytes", "spec GB/s", "at spec", "measured GB/s", "at measured", "best strategy", "note"):
        table.add_column(col, overflow="fold")

    def ms(seconds: float | None) -> str:
        return f"{seconds * 1e3:.2f} ms" if seconds is not None else "-"

    for p in plans:
        table.add_row(p.tier, f"{p.kv_bytes / 1e9:.3f} GB", format_gbps(p.peak_gbps), ms(p.peak_s),
                      format_gbps(p.measured_gbps), ms(p.measured_s) if p.measured_s else "no measurement",
                      p.strategy or "-", p.note)
    out.print(table)


def _documents(refs: list[str], db: str | None):
    """Run documents for run ids, `latest`, `baseline` or export files; the store opens only if needed."""
    from kvbench.analyze.runs import load_document
    from kvbench.store.database import open_store

    store = None

    def store_factory():
        nonlocal store
        store = store or open_store(db)
        return store

    return [load_document(ref, store_factory) for ref in refs]


@app.command()
def compare(
    base: Annotated[str, typer.Argument(help="run id, 'latest', 'baseline', or a JSON export")],
    new: Annotated[str, typer.Argument(help="run id, 'latest', 'baseline', or a JSON export")] = "latest",
    threshold: Annotated[str, typer.Option(help="practical floor for a regression, e.g. 5%")] = "5%",
    fmt: Annotated[str, typer.Option("--format", help="table | markdown | json")] = "table",
    cross_host: Annotated[bool, typer.Option("--cross-host", help="allow runs of different hosts or contexts")] = False,
    db: DbOption = None,
) -> None:
    """Regressions from BASE to NEW: Mann-Whitney U on the raw samples and a practical floor. Exit 1 on one."""
    from kvbench.analyze.compare import compare_runs, has_regression

    if fmt not in ("table", "markdown", "json"):
        raise BadInput(f"bad --format '{fmt}': choose table, markdown or json")
    floor = _fraction(threshold, "--threshold")
    base_doc, new_doc = _documents([base, new], db)
    comparisons = compare_runs(base_doc, new_doc, floor, cross_host)
    title = f"run {base_doc['run']['id']} → run {new_doc['run']['id']} (regression: p < 0.01 and ≥ {floor:.0%})"
    if fmt == "json":
        sys.stdout.write(json.dumps({"base": base_doc["run"]["id"], "new": new_doc["run"]["id"], "threshold": floor,
                                     "comparisons": [c.to_dict() for c in comparisons]}, indent=2) + "\n")
    elif fmt == "markdown":
        from kvbench.report.table import comparisons_markdown

        sys.stdout.write(comparisons_markdown(comparisons, title, describe_params))
    else:
        from kvbench.report.table import comparisons_table

        out.print(comparisons_table(comparisons, title, describe_params))
    if has_regression(comparisons):
        raise CheckFailed(f"{sum(c.verdict == 'regression' for c in comparisons)} regression(s) from run "
                          f"{base_doc['run']['id']} to run {new_doc['run']['id']}")


def _fraction(text: str, option: str) -> float:
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise BadInput(f"bad {option} '{text}': give a percentage such as 5%") from None
    if not 0 <= value < 1:
        raise BadInput(f"bad {option} '{text}': must be between 0% and 100%")
    return value


@app.command()
def export(
    run_ref: Annotated[str, typer.Argument(metavar="RUN", help="run id, 'latest', 'baseline' or a JSON export")] = "latest",
    fmt: Annotated[str, typer.Option("--format", help="github-action-benchmark | pytest-benchmark | json")] = "json",
    output: Annotated[str, typer.Option("-o", "--output", help="file, or - for stdout")] = "-",
    db: DbOption = None,
) -> None:
    """Write a run in a format CI dashboards read."""
    from kvbench.analyze import export as exporters

    makers = {"github-action-benchmark": exporters.github_action_benchmark,
              "pytest-benchmark": exporters.pytest_benchmark, "json": lambda d: d}
    if fmt not in makers:
        raise BadInput(f"bad --format '{fmt}': choose {', '.join(makers)}")
    (doc,) = _documents([run_ref], db)
    _write_text(json.dumps(makers[fmt](doc), indent=2, default=str) + "\n", output)


@app.command()
def tag(
    run_ref: Annotated[str, typer.Argument(metavar="RUN", help="run id or 'latest'")],
    key: Annotated[str, typer.Argument(help="tag name, e.g. baseline")],
    value: Annotated[str, typer.Argument(help="tag value")] = "1",
    db: DbOption = None,
) -> None:
    """Tag a stored run (a run tagged `baseline` is what `compare baseline` and reports compare with)."""
    from kvbench.store.database import open_store

    store = open_store(db)
    run_id = store.resolve_run(run_ref)
    store.set_tag(run_id, key, value)
    out.print(f"run {run_id}: {key}={value}")


@app.command()
def history(
    bench: Annotated[str, typer.Argument(help="benchmark id")],
    params: Annotated[list[str] | None, typer.Option("--params", help="only cases with key=value")] = None,
    threshold: Annotated[str, typer.Option(help="smallest level shift that starts a segment")] = "5%",
    db: DbOption = None,
) -> None:
    """Median GB/s of each case over all runs of this host, cut where the level persistently shifted."""
    from kvbench.analyze.history import segments
    from kvbench.benches.registry import get_bench
    from kvbench.hardware import fingerprint
    from kvbench.store.database import open_store

    spec = get_bench(bench)
    wanted = {k: spec.params[k].parse(k, v) if k in spec.params else v for k, v in _pairs(params, "--params").items()}
    floor = _fraction(threshold, "--threshold")
    store = open_store(db)
    host_id = fingerprint.host_id(fingerprint.collect_facts())
    rows = [r for r in store.host_results(host_id, bench)
            if r["status"] == "ok" and all(r["params"].get(k) == v for k, v in wanted.items())]
    if not rows:
        raise BadInput(f"no {bench} results for this host{' with ' + ' '.join(params) if params else ''} in {store.url}")
    cases: dict[str, list[dict]] = {}
    for r in rows:
        cases.setdefault(r["case_hash"], []).append(r)
    for series in cases.values():
        values = [r["gbps_median"] for r in series]
        table = Table(title=f"{bench} {describe_params(bench, series[0]['params'])}", title_justify="left")
        for col in ("run", "started", "median GB/s", "segment"):
            table.add_column(col)
        for n, seg in enumerate(segments(values, floor)):
            for r in series[seg.start:seg.end]:
                table.add_row(str(r["run_id"]), f"{r['started_at']:%Y-%m-%d %H:%M}", format_gbps(r["gbps_median"]),
                              f"{n + 1} (median {format_gbps(seg.median)})")
        out.print(table)


@app.command()
def accept(
    suite: Annotated[str, typer.Option(help="suite to run")] = "acceptance",
    rules: Annotated[str | None, typer.Option(help="rules TOML (default: suites/rules matching this host)")] = None,
    junit: Annotated[str | None, typer.Option(help="write JUnit XML here")] = None,
    run_ref: Annotated[str | None, typer.Option("--run", help="judge a stored run instead of running the suite")] = None,
    db: DbOption = None,
) -> None:
    """Run the acceptance suite and judge it against the rules: PASS / FAIL / SKIP per rule. Exit 1 on a FAIL."""
    from kvbench.analyze.accept import judge, junit_xml, load_rules, rules_for_host
    from kvbench.analyze.runs import run_document
    from kvbench.report.table import verdicts_table
    from kvbench.store.database import open_store

    rules_files = [load_rules(Path(rules))] if rules else None  # bad rules fail before anything runs
    if run_ref is None:
        run(suite=suite, bench=None, set_=None, db=db, json_out=None, tag=["purpose=acceptance"], samples=None)
        run_ref = "latest"
    store = open_store(db)
    doc = run_document(store, store.resolve_run(run_ref))
    gpus = ((doc.get("host") or {}).get("facts") or {}).get("gpus") or []
    verdicts = judge(doc, rules_files or rules_for_host(gpus))
    out.print(verdicts_table(verdicts, f"acceptance of run {doc['run']['id']}"))
    if junit:
        Path(junit).write_text(junit_xml(verdicts))
        err.print(f"wrote {junit}")
    failed = [v for v in verdicts if v.verdict == "FAIL"]
    if failed:
        raise CheckFailed(f"{len(failed)} acceptance rule(s) failed: {', '.join(sorted({v.rule for v in failed}))}")


@app.command("fleet")
def fleet_cmd(
    bench: Annotated[list[str] | None, typer.Option("--bench", help="only these benchmarks")] = None,
    outliers_only: Annotated[bool, typer.Option("--outliers", help="show only the hosts that stand out")] = False,
    db: DbOption = None,
) -> None:
    """Every host's latest result per case side by side; hosts far from their SKU's median are flagged."""
    from kvbench.analyze.fleet import fleet
    from kvbench.store.database import open_store

    store = open_store(db)
    rows = [r for r in store.all_results() if not bench or r["bench"] in bench]
    if not rows:
        raise BadInput(f"no results in {store.url}{' for ' + ', '.join(bench) if bench else ''}")
    table = Table(title=f"fleet · {store.url}", title_justify="left")
    for col in ("benchmark", "parameters", "host", "SKU", "GB/s", "SKU median", "deviation", ""):
        table.add_column(col, overflow="fold")
    flagged = 0
    for r in fleet(rows, store.hosts()):
        flagged += r.outlier
        if outliers_only and not r.outlier:
            continue
        table.add_row(r.bench, describe_params(r.bench, r.params), r.hostname, r.sku, format_gbps(r.gbps),
                      format_gbps(r.sku_median), f"{r.deviation:+.1%}", "[bold red]OUTLIER[/]" if r.outlier else "")
    out.print(table)
    out.print(f"{flagged} outlier(s)")


@app.command()
def report(
    runs: Annotated[list[str] | None, typer.Argument(metavar="RUN...", help="run ids, 'latest', or JSON exports")] = None,
    output: Annotated[str, typer.Option("-o", "--output", help="report file")] = "report.html",
    fmt: Annotated[str, typer.Option("--format", help="html | markdown")] = "html",
    baseline: Annotated[str | None, typer.Option(help="compare with this run ('baseline' = the tagged one)")] = None,
    model: Annotated[str, typer.Option(help="model for the restore plan")] = "Llama-3.1-70B",
    tokens: Annotated[int, typer.Option(min=1, help="tokens for the restore plan")] = 8192,
    db: DbOption = None,
) -> None:
    """One self-contained HTML report (plots embedded) or Markdown for a ticket."""
    from kvbench.report import content, render

    if fmt not in ("html", "markdown"):
        raise BadInput(f"bad --format '{fmt}': choose html or markdown")
    docs = _documents(runs or ["latest"], db)
    base = _documents([baseline], db)[0] if baseline else None
    built = content.build(docs, base, model=model, tokens=tokens)
    _write_text(render.html(built) if fmt == "html" else render.markdown(built), output)


@app.command()
def plot(
    run_ref: Annotated[str, typer.Argument(metavar="RUN", help="run id, 'latest', or a JSON export")] = "latest",
    bench: Annotated[str, typer.Option(help="benchmark to draw")] = "dram.copy",
    output: Annotated[str, typer.Option("-o", "--output", help="figure file (.png or .svg)")] = "figure.png",
    db: DbOption = None,
) -> None:
    """One figure for a slide: rate vs size for a benchmark, or KV strategies vs block size for kv.restore."""
    from kvbench.report import plots

    if not output.endswith((".png", ".svg")):
        raise BadInput(f"bad --output '{output}': use a .png or .svg file")
    (doc,) = _documents([run_ref], db)
    fig = plots.kv_strategies(doc["results"]) if bench == "kv.restore" else plots.bandwidth_vs_size(doc["results"], bench)
    if fig is None:
        raise BadInput(f"run {doc['run']['id']} has nothing to draw for {bench} (needs a size or block_tokens sweep)")
    plots.save(fig, output)
    err.print(f"wrote {output}")


@crosscheck_app.command("dram")
def crosscheck_dram(
    size: Annotated[str, typer.Option(help="buffer size")] = "256MiB",
    repeats: Annotated[int, typer.Option(help="mbw iterations")] = 10,
) -> None:
    """mbw (MEMCPY, MCBLOCK) and numpy copyto next to kvbench dram.copy, single-threaded."""
    from kvbench.crosscheck.dram import crosscheck_dram as run_crosscheck
    from kvbench.crosscheck.dram import render
    from kvbench.units import parse_size

    render(out, run_crosscheck(parse_size(size), repeats))


@crosscheck_app.command("storage")
def crosscheck_storage(
    io_size: Annotated[str, typer.Option(help="bytes per I/O")] = "1MiB",
    depth: Annotated[int, typer.Option(help="I/Os in flight (fio iodepth = kvbench batch)")] = 32,
    file_size: Annotated[str, typer.Option(help="file size")] = "256MiB",
    path: Annotated[str | None, typer.Option(help="directory (default: system temp dir)")] = None,
    api: Annotated[str, typer.Option(help="engine on both sides: aio (fio libaio) | uring (fio io_uring)")] = "aio",
) -> None:
    """fio next to kvbench storage.read through NIXL POSIX: same directory, sizes, depth, engine, O_DIRECT."""
    from kvbench.crosscheck.dram import render
    from kvbench.crosscheck.storage import crosscheck_storage as run_crosscheck
    from kvbench.units import parse_size

    if api not in ("aio", "uring"):
        raise BadInput(f"bad --api '{api}': choose aio or uring")
    figures = run_crosscheck(parse_size(io_size, "io_size"), depth, parse_size(file_size, "file_size"), path, api)
    render(out, figures, f"storage.read crosscheck ({io_size}, depth {depth}, {api}, GB/s = 1e9 B/s)", goal=0.90)


@crosscheck_app.command("pcie")
def crosscheck_pcie() -> None:
    """nvbandwidth's copy-engine tests next to pcie.h2d / pcie.d2h and each direction of pcie.bidir,
    pinned 256 MiB (goal: within 3 %)."""
    from kvbench.crosscheck.dram import render
    from kvbench.crosscheck.pcie import crosscheck_pcie as run_crosscheck

    for figures in run_crosscheck():
        render(out, figures, "pcie crosscheck (GB/s = 1e9 B/s)", goal=0.97, goal_max=1.03)


@crosscheck_app.command("net")
def crosscheck_net(
    tls: Annotated[str | None, typer.Option(help="UCX_TLS for both sides, e.g. cma,self (default: UCX chooses)")] = None,
) -> None:
    """ucx_perftest ucp_put_bw on loopback next to net.write peer=local, at 1 MiB and 64 KiB."""
    from kvbench.crosscheck.dram import render
    from kvbench.crosscheck.net import crosscheck_net as run_crosscheck

    for figures in run_crosscheck(tls=tls):
        render(out, figures, f"net.write crosscheck (loopback, UCX_TLS={tls or 'default'}, GB/s = 1e9 B/s)", goal=0.0)


@app.command()
def version() -> None:
    """Print kvbench's version."""
    out.print(__version__)


def main() -> None:
    # typer handles usage errors itself (exit 2); kvbench's own errors carry their exit code.
    try:
        app()
    except (BadInput, CheckFailed) as exc:
        prefix = "kvbench: error: " if isinstance(exc, BadInput) else "kvbench: "
        err.print(f"{prefix}{exc}", markup=False, highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
