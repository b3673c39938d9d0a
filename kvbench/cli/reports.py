"""`kvbench report`, `kvbench plot`, `kvbench export`: runs as documents people and dashboards read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from kvbench.cli.app import app
from kvbench.cli.common import (
    DbOption,
    PeaksOption,
    check_writable,
    documents,
    existing_store,
    history_store,
    judged_documents,
    use_peaks,
    write_text,
)
from kvbench.errors import BadInput


@app.command()
def report(
    runs: Annotated[list[str] | None, typer.Argument(metavar="RUN...", help="run ids, 'latest', 'baseline' or JSON exports")] = None,
    output: Annotated[str | None, typer.Option("-o", "--output", help="report file (default: report.html, or "
                                                                      "report.md with --format markdown)")] = None,
    fmt: Annotated[str | None, typer.Option("--format", help="html | markdown (default: by -o's extension, else "
                                                             "html)")] = None,
    baseline: Annotated[str | None, typer.Option(help="compare with this run ('baseline' = the tagged one)")] = None,
    model: Annotated[str, typer.Option(help="model for the restore plan")] = "Llama-3.1-70B",
    tokens: Annotated[str, typer.Option(metavar="N", help="tokens for the restore plan: 8192, or 8k = 8Ki = 8192")]
    = "8192",
    profile: Annotated[str | None, typer.Option(help="host profile for the acceptance verdict (default: "
                                                     "$KVBENCH_PROFILE)")] = None,
    db: DbOption = None,
    peaks: PeaksOption = None,
) -> None:
    """One self-contained HTML report (plots embedded) or Markdown for a ticket; its first heading starts with
    the acceptance's overall verdict (PASS, FAIL or INCOMPLETE)."""
    from kvbench.analyze.accept.profile import load_profile, profile_path
    from kvbench.cli.decide import token_count

    tokens = token_count(tokens)
    by_name = {".md": "markdown", ".markdown": "markdown", ".html": "html", ".htm": "html"}.get(
        Path(output).suffix.lower()) if output else None
    if fmt is not None and fmt not in ("html", "markdown"):
        raise BadInput(f"bad --format '{fmt}': choose html or markdown")
    if fmt is not None and by_name is not None and fmt != by_name:  # HTML in x.md would open as text
        raise BadInput(f"bad --format {fmt} for -o {output}: its extension says {by_name}; name the file for "
                       "what it holds, or leave --format out")
    fmt = fmt or by_name or "html"
    output = output or ("report.html" if fmt == "html" else "report.md")  # the file is named by what it holds
    use_peaks(peaks)
    wanted = profile_path(profile)
    host_profile = load_profile(wanted) if wanted else None
    check_writable(output, "--output", db, [*(runs or []), *([baseline] if baseline else [])])
    from kvbench.report import content, render  # matplotlib and seaborn: seconds, so after every check of input

    docs = judged_documents(runs or ["latest"], db)
    base = judged_documents([baseline], db)[0] if baseline else None
    history = pooled = None
    if base is not None:  # weighed against the same history `compare` uses, so both give one verdict
        from kvbench.analyze.regress.carried import with_carried
        from kvbench.analyze.regress.compare import case_history
        from kvbench.analyze.regress.pooled import pooled_base

        history = with_carried(case_history(existing_store(db), docs[-1]), base, docs[-1])
        pooled = pooled_base(existing_store(db), base, docs[-1])  # a --repeat baseline: the median of its runs
    from kvbench.cli.accept_steps import stored_drift

    drift = stored_drift(docs[-1], (runs or ["latest"])[-1], db)  # as accept names it for the same run
    built = content.build(docs, base, model=model, tokens=tokens, profile=host_profile, baseline_history=history,
                          drift=drift, pooled_baseline=pooled)
    write_text(render.html(built) if fmt == "html" else render.markdown(built), output)


@app.command()
def plot(
    run_ref: Annotated[str, typer.Argument(metavar="RUN", help="run id, 'latest', 'baseline' or a JSON export")] = "latest",
    bench: Annotated[str, typer.Option(help="benchmark to draw")] = "dram.copy",
    output: Annotated[str, typer.Option("-o", "--output", help="figure file (.png or .svg)")] = "figure.png",
    db: DbOption = None,
) -> None:
    """One figure for a slide: rate vs size for a benchmark, or KV strategies vs block size for kv.restore."""
    from kvbench.benches.registry import get_bench

    get_bench(bench)  # an unknown id is bad input, with the closest one suggested
    if not output.endswith((".png", ".svg")):
        raise BadInput(f"bad --output '{output}': use a .png or .svg file")
    check_writable(output, "--output", db, [run_ref])
    from kvbench.report import plots  # matplotlib: after the checks of input
    (doc,) = documents([run_ref], db)
    fig = plots.kv_strategies(doc["results"]) if bench == "kv.restore" else plots.bandwidth_vs_size(doc["results"], bench)
    if fig is None:
        raise BadInput(_nothing_to_draw(doc, bench))
    write_text(plots.figure_bytes(fig, output.rsplit(".", 1)[-1]), output)


@app.command()
def export(
    run_ref: Annotated[str, typer.Argument(metavar="RUN", help="run id, 'latest', 'baseline' or a JSON export")] = "latest",
    fmt: Annotated[str, typer.Option("--format", help="github-action-benchmark | pytest-benchmark | json")] = "json",
    output: Annotated[str, typer.Option("-o", "--output", help="file, or - for stdout")] = "-",
    db: DbOption = None,
) -> None:
    """Write a run in a format CI dashboards read."""
    from kvbench.analyze.regress import export as exporters

    makers = {"github-action-benchmark": exporters.github_action_benchmark,
              "pytest-benchmark": exporters.pytest_benchmark, "json": lambda d: d}
    if fmt not in makers:
        raise BadInput(f"bad --format '{fmt}': choose {', '.join(makers)}")
    check_writable(output, "--output", db, [run_ref])
    (doc,) = documents([run_ref], db)
    if fmt == "github-action-benchmark":  # each case's allowance, from the history compare would weigh
        from kvbench.analyze.regress.compare import case_history

        history = case_history(history_store(db, run_ref), doc)
        makers[fmt] = lambda d: exporters.github_action_benchmark(d, history)
    if fmt == "json" and "history" not in doc:  # a baseline export keeps the noise of the runs behind it
        from kvbench.analyze.regress.carried import exported_history

        if carried := exported_history(history_store(db, run_ref), doc):
            doc = {**doc, "history": carried}
    if fmt == "json" and "baseline_pool" not in doc:  # and a --repeat baseline the rates of each of its runs
        from kvbench.analyze.regress.pooled import batch_rates

        if pool := batch_rates(history_store(db, run_ref), doc):
            doc = {**doc, "baseline_pool": pool}
    write_text(json.dumps(makers[fmt](doc), indent=2, default=str) + "\n", output)


def _nothing_to_draw(doc: dict, bench: str) -> str:
    """Why a run gives no figure for `bench`: no such result, none measured (with the first reason), or no sweep."""
    run_id, mine = doc["run"]["id"], [r for r in doc["results"] if r["bench"] == bench]
    if not mine:
        ran = sorted({r["bench"] for r in doc["results"]})
        return f"run {run_id} has no {bench} result (it ran {', '.join(ran) or 'nothing'}); pick one with --bench"
    if not any(r["status"] == "ok" for r in mine):
        first = mine[0]
        return (f"run {run_id} measured no {bench} case: {len(mine)} {first['status']}"
                + (f" ({first['reason']})" if first.get("reason") else ""))
    return f"run {run_id} has nothing to draw for {bench}: the figure needs a size or block_tokens sweep"


@app.command("import")
def import_cmd(
    files: Annotated[list[str], typer.Argument(metavar="FILE...", help="run exports ('kvbench export RUN' or "
                                               "'kvbench run --json'); a cluster run's export holds each rank's run")],
    db: DbOption = None,
) -> None:
    """Store exported runs in this database: each rank's export of one launch (ranks that stored apart) makes
    its cluster run whole again (cluster:<id>). Importing a run the database holds already stores nothing."""
    from kvbench.analyze.runs import read_export
    from kvbench.input_files import EXPORT_MAX_BYTES, read_json_file
    from kvbench.store import open_store
    from kvbench.store.imports import check_importable, import_run

    docs = []
    for name in files:  # every file read and checked before anything is stored
        where = f"export file '{name}'"
        raw = read_json_file(Path(name), where, EXPORT_MAX_BYTES)
        parts = raw.get("ranks") if isinstance(raw, dict) and isinstance(raw.get("ranks"), list) else [raw]
        for i, part in enumerate(parts):
            named = where if len(parts) == 1 else f"{where}: rank document {i}"
            doc = read_export(part, named)  # every check the readers make, then what a database must not hold
            check_importable(doc, named)
            if str(doc["run"]["id"]).startswith("cluster:"):
                raise BadInput(f"{where} is a cluster run without its ranks' runs: export it again with this "
                               "kvbench, or import each rank's own export")
            docs.append((name, doc))
    store = open_store(db)
    clusters = set()
    for name, doc in docs:
        run_id, new = import_run(store, doc)
        cluster = (doc["run"].get("tags") or {}).get("cluster")
        clusters |= {cluster} if cluster else set()
        print(f"{name}: run {doc['run']['id']} {'stored as' if new else 'already here as'} run {run_id}"
              + (f" (cluster:{cluster})" if cluster else ""))
    for cluster in sorted(clusters):
        from kvbench.analyze.runs import cluster_document

        partial = cluster_document(store, cluster)["run"].get("partial")
        print(f"cluster:{cluster}: {'whole' if not partial else partial}")
