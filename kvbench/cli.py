"""The `kvbench` command: thin; every decision lives in the packages it calls."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
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
def info(as_json: Annotated[bool, typer.Option("--json", help="print the facts as JSON")] = False) -> None:
    """Host facts (CPU, NUMA, PCIe links, GPUs, NICs, NVMe, DRAM) and the spec peaks of each path."""
    from kvbench.hardware import fingerprint
    from kvbench.report.info import info_document, render_info

    facts = fingerprint.collect_facts()
    doc = info_document(facts)
    if as_json:
        out.print_json(json.dumps(doc, default=str))
    else:
        render_info(out, doc)


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
    from kvbench.plan.cases import plan
    from kvbench.plan.suite import BenchSweep, SuiteSettings, load_suite
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
    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                        TextColumn("eta"), TimeRemainingColumn(), console=err, transient=True)
    task = progress.add_task("kvbench run", total=len(cases))

    def on_result(result) -> None:
        progress.update(task, advance=1, description=f"{result.bench} {describe_params(result.bench, result.params)}"[:60])

    try:
        with progress:
            run_id = execute(cases, store, facts, engine_settings, info, on_result=on_result)
    except KeyboardInterrupt:
        err.print("kvbench: interrupted; the run is marked aborted and its finished results are kept")
        raise typer.Exit(130) from None
    rows = store.results(run_id)
    show.print(results_table(rows, describe_params, title=f"run {run_id} · {info.suite or 'ad hoc'} · {store.url} · GB/s = 1e9 B/s"))
    if json_out:
        _write_json(store, run_id, json_out)
    if any(r["status"] == "failed" for r in rows):
        raise CheckFailed(f"run {run_id}: {sum(r['status'] == 'failed' for r in rows)} case(s) failed")


def _json_document(store, run_id: int) -> dict:
    from kvbench.result import row_to_json, run_to_json

    return {
        "run": run_to_json(store.run(run_id)),
        "results": [row_to_json(r, store.samples(r["id"])) for r in store.results(run_id)],
    }


def _write_json(store, run_id: int, target: str) -> None:
    text = json.dumps(_json_document(store, run_id), indent=2, default=str)
    if target == "-":
        sys.stdout.write(text + "\n")
    else:
        Path(target).write_text(text + "\n")
        err.print(f"wrote {target}")


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
