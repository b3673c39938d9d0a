"""`kvbench plan`, `kvbench policy`: decisions from this host's measurements — restore a model's KV
or recompute it, and which strategy moves it at which fragment size."""

from __future__ import annotations

import shlex
from typing import Annotated

import typer

from kvbench.cli.app import app
from kvbench.cli.common import (
    DbOption,
    JsonOption,
    PeaksOption,
    check_writable,
    out,
    this_host_ids,
    use_peaks,
    write_json,
)
from kvbench.errors import BadInput

MAX_TOKENS = 10**9  # no model has a context near it; a larger count is a typo (10^20 priced a recompute at 10^34 ms)


def token_count(text: str) -> int:
    """`--tokens` as a count (8192, 8k = 8Ki = 8192), from 1 to MAX_TOKENS; one line naming it otherwise."""
    from kvbench.units import parse_count

    count = parse_count(text, "--tokens")
    if not 1 <= count <= MAX_TOKENS:
        raise BadInput(f"bad --tokens {text}: give from 1 to {MAX_TOKENS:,} tokens")
    return count


def _positive(value: float | None, option: str) -> float | None:
    if value is not None and not (value > 0 and value < float("inf")):
        raise BadInput(f"bad {option} {value}: must be a finite number above 0")
    return value


@app.command("plan")
def plan_cmd(
    model: Annotated[str, typer.Option(help="model preset or config.json path")],
    tokens: Annotated[str, typer.Option(metavar="N", help="tokens to restore: 8192, or 8k = 8Ki = 8192 "
                                                             "(k = 1024, as context lengths count)")],
    tp: Annotated[int, typer.Option(min=1, help="tensor-parallel degree (divides KV heads and prefill alike)")] = 1,
    dtype: Annotated[str, typer.Option(help="bf16 | fp16 | fp8")] = "bf16",
    block_tokens: Annotated[int, typer.Option("--block-tokens", min=1, help="tokens per KV block")] = 16,
    mfu: Annotated[float, typer.Option(help="fraction of the compute rate a real prefill reaches")] = 0.5,
    tflops: Annotated[float | None, typer.Option(help="dense bf16 TFLOP/s per GPU to assume (else measured "
                                                      "gpu.matmul, else the GPU's datasheet)")] = None,
    gpu: Annotated[str | None, typer.Option(help="price recompute at this GPU's datasheet rate, e.g. H200 "
                                                   "(over a measured gpu.matmul)")] = None,
    params: Annotated[float | None, typer.Option("--params", help="active parameters per token, e.g. 37e9 "
                                                                  "(for a config.json kvbench cannot count)")] = None,
    json_out: JsonOption = None,
    db: DbOption = None,
    peaks: PeaksOption = None,
) -> None:
    """Restore or recompute: each tier's restore time (spec and measured, one request's p99) beside
    the prefill that would recompute the same KV, and the break-even token count."""
    from kvbench.analyze.decide.peer_tier import BENCHES, with_peer_tier
    from kvbench.analyze.decide.recompute import compute_rate
    from kvbench.analyze.decide.restore_plan import decide, measured_models, restore_plan
    from kvbench.kv.geometry import get_model
    from kvbench.report.analysis_tables import plan_answer_lines, plan_table
    from kvbench.run.this_host import host_facts
    from kvbench.store import open_store

    tokens = token_count(tokens)
    if not 0 < mfu <= 1:
        raise BadInput(f"bad --mfu {mfu}: a fraction above 0 and at most 1")
    use_peaks(peaks)  # the datasheet rates recomputing is priced at: the user's where their file gives them
    _positive(tflops, "--tflops")
    if tflops and gpu:
        raise BadInput("give --tflops or --gpu, not both: each sets the rate recomputing runs at")
    if gpu:
        compute_rate([], [], None, gpu)  # a GPU with no datasheet figure is refused before anything is read
    _positive(params, "--params")
    check_writable(json_out, "--json", db)
    geometry = get_model(model)
    store = open_store(db, read_only=True)
    mine = this_host_ids(store)
    rows = store.host_results(mine, "kv.restore")
    tiers = restore_plan(geometry, tokens, dtype, tp, block_tokens, rows)
    gpus = [g.name for g in host_facts(dram=False).gpus]
    tiers = with_peer_tier(tiers, geometry, tokens, dtype, tp, block_tokens,
                           [r for bench in BENCHES for r in store.host_results(mine, bench)], len(gpus))
    if not tiers:
        others = measured_models(rows)
        if others:  # another model's rates and request times are not this model's
            raise BadInput(f"no kv.restore results of {geometry.name} for this host in {store.url} (measured: "
                           f"{', '.join(others)}); run 'kvbench run --suite kv-restore --set model={shlex.quote(model)}'")
        raise BadInput(f"no kv.restore results for this host in {store.url}; run 'kvbench run --suite kv-restore' first")
    rate = compute_rate(store.host_results(mine, "gpu.matmul"), gpus, tflops, gpu)
    answer = decide(geometry, tokens, dtype, tp, tiers, rate, mfu, params)
    if json_out:
        from kvbench.report.json_docs import plan_doc

        write_json(plan_doc(answer), json_out)
        if json_out == "-":
            return
    fragment = block_tokens * geometry.unit_bytes_per_token(dtype, tp)
    out.print(plan_table(answer.tiers, f"restore {tokens} tokens of {geometry.name} ({dtype}, tp={tp}, "
                                       f"{block_tokens}-token blocks, {fragment} B fragments)"))
    for line in plan_answer_lines(answer):
        out.print(line)


@app.command("policy")
def policy_cmd(
    json_out: JsonOption = None,
    db: DbOption = None,
) -> None:
    """Which KV strategy to use at which fragment size: the fastest over each range of swept sizes,
    per path, with its GB/s, α and β (from this host's kv.restore block-size sweeps); and which
    transport, Mooncake or NIXL, wins at each size (from transport=both cases' paired ratios)."""
    from kvbench.analyze.decide.policy import policies
    from kvbench.analyze.decide.transport_choice import BENCHES as TRANSPORT_BENCHES
    from kvbench.analyze.decide.transport_choice import transport_choices
    from kvbench.report.analysis_tables import policy_table, transport_table
    from kvbench.store import open_store

    check_writable(json_out, "--json", db)
    store = open_store(db, read_only=True)
    mine = this_host_ids(store)
    found = policies(store.host_results(mine, "kv.restore") + store.host_results(mine, "kv.handoff"))
    choices = transport_choices([r for bench in TRANSPORT_BENCHES for r in store.host_results(mine, bench)])
    if not found and not choices:
        raise BadInput(f"no kv.restore results with fragment sizes, and no transport=both results, for this host in "
                       f"{store.url}; run 'kvbench run --suite kv-restore' (or --set transport=both) first")
    if json_out:
        from kvbench.report.json_docs import policy_doc

        write_json(policy_doc(found, choices), json_out)
        if json_out == "-":
            return
    if found:
        out.print(policy_table(found))
    if choices:
        out.print(transport_table(choices))
