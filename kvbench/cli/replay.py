"""`kvbench replay`: a real serving trace through the tiers given, priced with this host's measurements
(docs/replay.md)."""

from __future__ import annotations

from typing import Annotated

import typer

from kvbench.cli.app import app
from kvbench.cli.common import DbOption, JsonOption, PeaksOption, check_writable, err, out, this_host_ids, use_peaks
from kvbench.errors import BadInput


@app.command("replay")
def replay_cmd(
    trace: Annotated[str | None, typer.Option(metavar="FILE", help="Mooncake-format trace (JSONL, or .gz), or the "
                                                                   "shipped 'mooncake-conversation'")] = None,
    model: Annotated[str | None, typer.Option(help="model preset or config.json path")] = None,
    tier: Annotated[list[str] | None, typer.Option(metavar="NAME=SIZE[:POLICY]", help="a tier of the configuration, "
                                                   "nearest the GPU first: hbm | dram | nvme | remote, e.g. hbm=20GB "
                                                   "dram=1TB:vllm (or =unbounded)")] = None,
    config: Annotated[list[str] | None, typer.Option(metavar="T=S,T=S", help="a whole configuration, e.g. "
                                                     "hbm=20GB,dram=1TB; give several to set them side by side")] = None,
    policy: Annotated[str, typer.Option(help="eviction policy of a tier that names none: lru | vllm | sglang-lfu")]
    = "lru",
    sweep: Annotated[str | None, typer.Option(metavar="TIER=SIZES", help="hit ratio against capacity: the first "
                                              "configuration again at each size, e.g. dram=64GB,256GB,1TB")] = None,
    dtype: Annotated[str, typer.Option(help="bf16 | fp16 | fp8")] = "bf16",
    tp: Annotated[int, typer.Option(min=1, help="tensor-parallel degree")] = 1,
    block_tokens: Annotated[int, typer.Option("--block-tokens", min=1, help="tokens per engine (paged) block")] = 16,
    trace_block_tokens: Annotated[int, typer.Option("--trace-block-tokens", min=1, help="tokens per hash block of "
                                                    "the trace (512 in the published Mooncake traces)")] = 512,
    into: Annotated[str, typer.Option(help="where restores end: gpu, or dram (the host gather a GPU-less box "
                                           "executes)")] = "gpu",
    mfu: Annotated[float, typer.Option(help="fraction of the compute rate a real prefill reaches")] = 0.5,
    tflops: Annotated[float | None, typer.Option(help="dense bf16 TFLOP/s per GPU (else measured gpu.matmul, else "
                                                      "this host's GPU datasheet)")] = None,
    gpu: Annotated[str | None, typer.Option(help="price recompute at this GPU's datasheet rate, e.g. H100")] = None,
    execute: Annotated[int, typer.Option(metavar="N", min=0, help="also run the first N requests' restores for real "
                                         "(back to back) and store them as a kv.replay run")] = 0,
    start: Annotated[int, typer.Option(min=0, help="--execute: the window's first request")] = 6000,
    execute_from: Annotated[str, typer.Option("--execute-from", help="--execute: where the pool is: dram (gathered "
                                              "DRAM → DRAM) or file (read O_DIRECT, then gathered)")] = "dram",
    execute_into: Annotated[str, typer.Option("--execute-into", help="--execute: where restores end: hbm (pinned "
                                              "DRAM → GPU by a CUDA gather), dram, or auto (hbm with --into gpu on a "
                                              "CUDA host, else dram)")] = "auto",
    plot: Annotated[str | None, typer.Option(metavar="FILE", help="write the report section as a figure (.png or "
                                             ".svg): hit ratio against capacity, TTFT CDF, link demand")] = None,
    keep: Annotated[bool | None, typer.Option("--store/--no-store", help="keep the projection in the database "
                                               "(replay table; default: whenever a database is in use; --store "
                                               "creates one)")] = None,
    show: Annotated[int | None, typer.Option(metavar="ID", help="print stored replay ID (with --json: its record, "
                                             "what it was derived from and its document) and replay nothing")] = None,
    list_stored: Annotated[bool, typer.Option("--list", help="list the stored replays and replay nothing")] = False,
    json_out: JsonOption = None,
    db: DbOption = None,
    peaks: PeaksOption = None,
) -> None:
    """Replay a serving trace against the tiers this server measured: hit ratios, link demand and TTFT per
    configuration, a capacity sweep, and (--execute) the restores run for real beside their projection;
    each replay is stored (--show ID reads one back)."""
    from kvbench.cli import replay_store

    if list_stored:
        return replay_store.list_replays(db)
    if show is not None:
        record = replay_store.stored(show, db)
        if json_out:
            from kvbench.cli.common import write_json

            check_writable(json_out, "--json", db)
            return write_json(record, json_out)
        out.print(replay_store.header(record), markup=False, highlight=False)
        return _print(record["document"])
    if trace is None or model is None:
        raise BadInput("give --trace FILE and --model NAME (or --show ID / --list for a stored replay)")
    from kvbench.analyze.decide.replay.pricing import BENCHES
    from kvbench.analyze.decide.replay.project import Setting, project
    from kvbench.analyze.decide.replay.session import check_tiers, document, parse_config, parse_tier, pricer
    from kvbench.analyze.decide.replay.session import parse_sweep as parse_sweep_text
    from kvbench.analyze.decide.replay.session import sweep as run_sweep
    from kvbench.analyze.decide.recompute import compute_rate
    from kvbench.kv.geometry import get_model
    from kvbench.kv.trace import read_trace
    from kvbench.run.this_host import host_facts
    from kvbench.store import open_store
    from kvbench.store.connect import default_url, sqlite_path

    if execute_from not in ("dram", "file"):
        raise BadInput(f"bad --execute-from {execute_from}: dram or file")
    if into not in ("gpu", "dram"):
        raise BadInput(f"bad --into {into}: gpu or dram")
    from kvbench.cli.replay_execute import destination, execute_window

    execute_to = destination(execute_into, into, execute_from) if execute else None
    if not 0 < mfu <= 1:
        raise BadInput(f"bad --mfu {mfu}: a fraction above 0 and at most 1")
    if tflops and gpu:
        raise BadInput("give --tflops or --gpu, not both: each sets the rate recomputing runs at")
    use_peaks(peaks)
    configs = [parse_config(c, policy) for c in config or []]
    if tier:
        given = [parse_tier(t, policy) for t in tier]
        check_tiers(given, "--tier")
        configs.insert(0, given)
    if not configs:
        raise BadInput("no tiers: give --tier NAME=SIZE (e.g. --tier hbm=20GB --tier dram=1TB) or --config")
    swept = parse_sweep_text(sweep) if sweep else None
    check_writable(json_out, "--json", db)
    check_writable(plot, "--plot", db)
    if plot and not plot.lower().endswith((".png", ".svg")):
        raise BadInput(f"bad --plot {plot}: give a .png or .svg file")
    geometry = get_model(model)
    geometry.unit_bytes_per_token(dtype, tp)  # refuses a dtype or tp the model cannot take
    err.print(f"reading {trace}")
    loaded = read_trace(trace, trace_block_tokens, lambda lines: err.print(f"  {lines:,} lines read"))
    err.print(f"{loaded.requests:,} requests, {loaded.references:,} block references, {loaded.distinct:,} distinct blocks")
    rows, matmul = [], []
    path = sqlite_path(db or default_url())
    if path is not None and not path.exists():  # nothing measured yet: every path at its spec, labelled
        err.print(f"no database at {path}: every link is priced at its spec ('kvbench run --suite replay' measures them)")
    else:
        store = open_store(db, read_only=True)
        mine = this_host_ids(store)
        rows = [r for bench in BENCHES for r in store.host_results(mine, bench)]
        matmul = store.host_results(mine, "gpu.matmul")
    gpus = [g.name for g in host_facts(dram=False).gpus]
    rate = compute_rate(matmul, gpus, tflops, gpu)
    if rate is None:
        raise BadInput("no compute rate to price recomputing with: no gpu.matmul result and no GPU here; give "
                       "--gpu NAME (its datasheet, labelled spec) or --tflops X")
    setting = Setting(geometry, dtype, tp, block_tokens, rate, mfu)
    price = pricer(rows, setting, into)
    answers = []
    for i, tiers in enumerate(configs, 1):
        err.print(f"replaying configuration {i}/{len(configs)}: {', '.join(f'{t.name}' for t in tiers)}")
        answers.append(project(loaded, tiers, price(tiers), setting))
    swept_answer = None
    if swept:
        err.print(f"sweeping {swept[0]} over {len(swept[1])} capacities")
        swept_answer = run_sweep(loaded, configs[0], swept[0], swept[1], price, setting,
                                 lambda i, size: err.print(f"  {swept[0]} {i}/{len(swept[1])}: {size / 1e9:g} GB"))
    executed = None
    if execute:
        executed = execute_window(loaded, model, setting, rows, execute, start, db, execute_from, execute_to)
    doc = document(loaded, setting, answers, swept_answer, into, executed)
    replay_store.store_replay(doc, trace, policy, db, keep)
    if plot:
        from kvbench.report.replay_figure import write_replay_figure

        write_replay_figure(doc, answers, plot)
        err.print(f"wrote {plot}")
    if json_out:
        from kvbench.cli.common import write_json

        write_json(doc, json_out)
        if json_out == "-":
            return
    _print(doc)


def _print(doc: dict) -> None:
    from kvbench.report.replay_text import config_tables, executed_table, notes, sweep_table

    for table in config_tables(doc):
        out.print(table)
    if (table := sweep_table(doc)) is not None:
        out.print(table)
    if doc.get("executed") and doc["executed"].get("status") == "skipped":
        out.print(f"executed: skipped (run {doc['executed']['run_id']}): {doc['executed']['reason']}", markup=False,
                  highlight=False)
    elif doc.get("executed"):
        out.print(executed_table(doc["executed"]))
    for line in notes(doc):
        out.print(line, markup=False, highlight=False)
