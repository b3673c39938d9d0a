"""`kvbench fit`, `kvbench history`, `kvbench fleet`: answers from stored results."""

from __future__ import annotations

from typing import Annotated

import typer

from kvbench.cli.app import app
from kvbench.cli.common import (
    DbOption,
    JsonOption,
    check_writable,
    documents,
    fraction,
    out,
    pairs,
    this_host_ids,
    write_json,
)
from kvbench.errors import BadInput


@app.command()
def fit(
    run_ref: Annotated[str, typer.Argument(metavar="RUN", help="run id, 'latest', 'baseline' or a JSON export")]
    = "latest",
    json_out: JsonOption = None,
    db: DbOption = None,
) -> None:
    """Per-fragment cost α (µs) and streaming bandwidth β (GB/s) of each KV strategy over a block-size sweep."""
    from kvbench.analyze.decide.fit import fit_results
    from kvbench.report.analysis_tables import fit_table
    from kvbench.store.records import result_row

    check_writable(json_out, "--json", db, [run_ref])
    (doc,) = documents([run_ref], db)
    run_id = doc["run"]["id"]
    fits = fit_results([result_row(r) for r in doc["results"]])
    if not fits:
        raise BadInput(f"run {run_id} has no kv.restore / kv.offload results to fit")
    if json_out:
        from kvbench.report.json_docs import fit_doc

        write_json(fit_doc(run_id, fits), json_out)
        if json_out == "-":
            return
    out.print(fit_table(fits, run_id))
    out.print("'-': fewer than 3 block sizes, or fragments grew in proportion to bytes — sweep block_tokens to fit")


@app.command()
def history(
    bench: Annotated[str, typer.Argument(help="benchmark id")],
    params: Annotated[list[str] | None, typer.Option("--params", help="only cases with key=value")] = None,
    threshold: Annotated[str, typer.Option(help="smallest level shift that starts a segment")] = "5%",
    plot: Annotated[str | None, typer.Option("--plot", metavar="FILE", help="also draw the history to FILE (.png or .svg)")] = None,
    json_out: JsonOption = None,
    db: DbOption = None,
) -> None:
    """Median GB/s of each case over all runs of this host, cut where the level persistently shifted."""
    from kvbench.analyze.regress.history import run_verdicts, series_segments
    from kvbench.benches.describe import bench_params, canonical_subset
    from kvbench.report.analysis_tables import history_table
    from kvbench.store import open_store

    check_writable(json_out, "--json", db)
    check_writable(plot, "--plot", db)
    if plot and not plot.endswith((".png", ".svg")):
        raise BadInput(f"bad --plot '{plot}': use a .png or .svg file")
    bench_params(bench)  # an unknown id is bad input, with the closest one suggested
    wanted = canonical_subset(bench, pairs(params, "--params"), strict=True)
    floor = fraction(threshold, "--threshold")
    store = open_store(db, read_only=True)
    rows = [r for r in store.host_results(this_host_ids(store), bench)
            if r["status"] == "ok" and all(r["params"].get(k) == v for k, v in wanted.items())]
    if not rows:
        raise BadInput(f"no {bench} results for this host{' with ' + ' '.join(params) if params else ''} in {store.url}")
    cases: dict[str, list[dict]] = {}
    for r in rows:
        cases.setdefault(r["case_hash"], []).append(r)
    found = [(series, series_segments(series, floor)) for series in cases.values()]
    verdicts = [run_verdicts(series, floor) for series in cases.values()]  # compare's verdict, run by run
    if plot:
        from kvbench.cli.common import write_text
        from kvbench.report.history_plot import history_figure
        from kvbench.report.plots import figure_bytes

        latest = [next((v for v in reversed(judged) if v is not None), None) for judged in verdicts]
        figure = history_figure(bench, found, [v.allowance_ln if v else None for v in latest],
                                [v.allowance if v else None for v in latest])
        write_text(figure_bytes(figure, plot.rsplit(".", 1)[-1]), plot)
    if json_out:
        from kvbench.report.json_docs import history_doc

        write_json(history_doc(bench, found, verdicts), json_out)
        if json_out == "-":
            return
    for (series, segs), judged in zip(found, verdicts, strict=True):
        out.print(history_table(bench, series, segs, judged))


@app.command("fleet")
def fleet_cmd(
    bench: Annotated[list[str] | None, typer.Option("--bench", help="only these benchmarks")] = None,
    outliers_only: Annotated[bool, typer.Option("--outliers", help="show only the hosts that stand out")] = False,
    link_pairs: Annotated[bool, typer.Option("--pairs", help="the source × destination matrix of a cluster run's "
                                             "links (docs/cluster.md), slow links flagged")] = False,
    run_ref: Annotated[str | None, typer.Option("--run", metavar="RUN", help="--pairs: this run's pairs: cluster:ID, "
                                                "'latest' (the newest cluster run) or a run id (a rank's run: its "
                                                "whole launch); default: the newest result of each pair across "
                                                "runs")] = None,
    show: Annotated[str, typer.Option("--show", help="--pairs: what each cell shows: gbps | fraction (of the wire "
                                      "ceiling, a kv.restore burst's) | p50 | p99 (ms per request of a burst)")]
    = "gbps",
    json_out: JsonOption = None,
    db: DbOption = None,
) -> None:
    """Every host's latest result per case side by side; hosts far from their SKU's median are flagged."""
    from kvbench.analyze.fleet import fleet_in_database
    from kvbench.benches.describe import bench_params
    from kvbench.report.analysis_tables import fleet_table
    from kvbench.store import open_store

    for bench_id in bench or []:
        bench_params(bench_id)  # an unknown id is bad input, with the closest one suggested
    if run_ref is not None and not link_pairs:
        raise BadInput("--run picks the run of --pairs: add --pairs")
    from kvbench.report.link_table import SHOWN

    if show not in SHOWN:
        raise BadInput(f"bad --show '{show}': choose {', '.join(SHOWN)}")
    if show != "gbps" and not link_pairs:
        raise BadInput("--show picks what the cells of --pairs show: add --pairs")
    if link_pairs and outliers_only:
        raise BadInput("--outliers is for hosts, --pairs for links: give one of them")
    check_writable(json_out, "--json", db)
    store = open_store(db, read_only=True)
    if link_pairs:
        _link_matrix(store, bench, run_ref, json_out, show)
        return
    if not store.has_ok_results(bench or None):
        raise BadInput(f"no results in {store.url}{' for ' + ', '.join(bench) if bench else ''}")
    found = fleet_in_database(store, bench or None, outliers_only=outliers_only)
    if json_out:
        from kvbench.report.json_docs import fleet_doc

        write_json(fleet_doc([r for r in found if r.outlier or not outliers_only]), json_out)
        if json_out == "-":
            return
    out.print(fleet_table(found, f"fleet · {store.url}", outliers_only))
    out.print(f"{sum(r.outlier for r in found)} outlier(s)")


def _pairs_run(store, run_ref: str | None) -> tuple[int | str | None, list[int] | None]:
    """(what the matrix is of, the runs its pairs come from) for `fleet --pairs --run`: `cluster:<id>`,
    `latest` (the newest cluster run) and the id of any rank's run are the whole launch; a run of no
    launch is itself; none given is every run."""
    from kvbench.analyze.cluster_runs import PREFIX, cluster_id_of, cluster_run_ids, newest_cluster

    if run_ref is None:
        return None, None
    cluster = cluster_id_of(run_ref)
    if cluster is None and run_ref == "latest":
        cluster = newest_cluster(store)
    if cluster is None:
        run_id = store.resolve_run(run_ref)
        cluster = store.cluster_of(run_id)
        if not cluster:
            return run_id, [run_id]
    return f"{PREFIX}{cluster}", cluster_run_ids(store, cluster)


def _link_matrix(store, bench: list[str] | None, run_ref: str | None, json_out: str | None,
                 show: str = "gbps") -> None:
    """`fleet --pairs`: one matrix per benchmark, pattern and case, from the benchmarks that run
    against a peer (or those named)."""
    from kvbench.analyze.links.link_matrix import link_matrices
    from kvbench.benches.registry import all_benches
    from kvbench.report.link_table import link_notes, link_table

    benches = bench or sorted(b.id for b in all_benches().values() if "peer" in b.params)
    run_id, runs = _pairs_run(store, run_ref)
    matrices = link_matrices(store.link_results(benches, runs), run_id)
    if not matrices:
        where = (run_id if isinstance(run_id, str) else f"run {run_id}") if run_id is not None else store.url
        raise BadInput(f"no results naming a source and destination host ({', '.join(benches)}) in {where}: "
                       "run a pattern with kvbench.cluster.launch (docs/cluster.md)")
    if json_out:
        from kvbench.report.json_docs import pairs_doc

        write_json(pairs_doc(matrices), json_out)
        if json_out == "-":
            return
    for m in matrices:
        out.print(link_table(m, show))
        for line in link_notes(m):
            out.print(line, markup=False, highlight=False)
