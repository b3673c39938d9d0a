"""Terminal tables for the analyses: the α/β fit, the restore plan, a case's history, the fleet."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.markup import escape
from rich.table import Table

from kvbench.report.fit_table import FittedTable
from kvbench.units import format_gbps, format_size


# The benchmark registry (every benchmark module, numpy with them) and the noise model load when a
# table describes a case, not for `host list`, which only lists hosts (tests/test_startup_imports.py).
def describe_params(bench: str, params: dict[str, Any]) -> str:
    from kvbench.benches.describe import describe_params as describe

    return describe(bench, params)


def allowance_words(allowance_ln: float) -> str:
    from kvbench.analyze.regress.noise import allowance_words as words

    return words(allowance_ln)


def _table(title: str, columns: Iterable[str]) -> Table:
    table = Table(title=title, title_justify="left")
    for col in columns:
        table.add_column(col, overflow="fold")
    return table


def ms(seconds: float | None, missing: str = "-") -> str:
    return f"{seconds * 1e3:.2f} ms" if seconds is not None else missing


def fit_table(fits: list[tuple[dict[str, Any], Any]], run_id: int | str) -> Table:
    table = _table(f"run {run_id}: time = fragments × α + bytes / β",
                   ("benchmark", "series", "α µs/fragment", "β GB/s", "R²", "points"))
    for params, result in fits:
        params = dict(params)
        bench = params.pop("bench")
        series = describe_params(bench, params)
        if result is None:
            table.add_row(bench, series, "-", "-", "-", "-")
            continue
        r2 = f"{result.r2:.3f}" + (" [yellow](poor fit: R² < 0.9)[/]" if result.poor else "")
        table.add_row(bench, series, f"{result.alpha_us:.3f}",
                      f"{result.beta_gbps:.1f}" if result.beta_gbps else "∞", r2, str(result.points))
    return table


def plan_table(plans: list[Any], title: str) -> FittedTable:
    """Each tier's restore time at its spec and measured rates, beside recomputing (fits the terminal:
    numbers whole, notes as footnotes)."""
    rows = []
    for p in plans:
        request = p.request_ms
        p99 = (f"{request['p99']:.2f} ms ({request['tokens']} tok, {format_size(request['fragment_bytes'])})"
               if request else "-")
        wins = f"{p.break_even_tokens:,} token{'s' * (p.break_even_tokens != 1)}" if p.break_even_tokens else ("never (≤16M)" if p.faster else "-")
        rows.append([escape(c) for c in [p.tier, f"{p.kv_bytes / 1e9:.3f} GB", format_gbps(p.peak_gbps), ms(p.peak_s),
                     format_gbps(p.measured_gbps), ms(p.measured_s, "no measurement"), p99, p.strategy or "-",
                     p.faster or "-", wins, p.note or ""]])
    return FittedTable(escape(title), [("tier", "text"), ("KV bytes", "number"), ("spec GB/s", "number"),
                                       ("at spec", "number"), ("measured GB/s", "number"), ("at measured", "text"),
                                       ("one request p99", "text"), ("best strategy", "id"), ("faster", "text"),
                                       ("restore wins from", "text"), ("note", "note")], rows,
                       optional=("spec GB/s", "at spec", "faster", "one request p99"))


def plan_answer_lines(answer: Any) -> list[str]:
    """What recomputing costs, said under the plan's table."""
    r = answer.recompute
    if r is None:
        return [f"recompute: {answer.recompute_note}"]
    return [f"recompute: {r['seconds'] * 1e3:.1f} ms to prefill {answer.tokens:,} token{'s' * (answer.tokens != 1)} ({r['flops'] / 1e12:.1f} "
            f"TFLOP over tp={r['tp']} at {r['tflops']:.0f} TFLOP/s × MFU {r['mfu']:.2f}; {r['source']})"]


def policy_table(found: list[Any]) -> FittedTable:
    """The fastest KV strategy per fragment-size range, path, model and layout (fits the terminal)."""
    hosts = {p.host for p in found}
    rows = []
    for p in found:
        lo, hi = p.fragment_bytes
        span = format_size(lo) if lo == hi else f"{format_size(lo)}–{format_size(hi)}"
        rows.append([escape(c) for c in [p.path + (f" on {str(p.host)[:12]}" if len(hosts) > 1 else ""), p.model, p.layout, span,
                     p.strategy, format_gbps(p.gbps),
                     f"{p.alpha_us:.3f}" if p.alpha_us is not None else "-",
                     format_gbps(p.beta_gbps) if p.beta_gbps else ("∞" if p.alpha_us is not None else "-"),
                     ", ".join(map(str, p.runs)) or "-", f"within noise of {p.tie_with}" if p.tie_with else ""]])
    return FittedTable("fastest KV strategy by fragment size (swept sizes only)",
                       [("path", "text"), ("model", "id"), ("layout", "text"), ("fragments", "id"),
                        ("strategy", "id"), ("GB/s (lowest in range)", "number"), ("α µs/fragment", "number"),
                        ("β GB/s", "number"), ("runs", "text"), ("note", "note")], rows,
                       optional=("runs", "β GB/s", "α µs/fragment"))


def transport_table(choices: list[Any]) -> FittedTable:
    """Mooncake or NIXL at each size, from transport=both cases (ratio Mooncake / NIXL, paired)."""
    rows = [[escape(c) for c in [x.bench, x.between, format_size(x.size_bytes), x.winner,
                                 f"{x.ratio:.2f}× ({x.p10:.2f}–{x.p90:.2f})",
                                 format_gbps(x.mooncake_gbps) if x.mooncake_gbps else "-",
                                 format_gbps(x.nixl_gbps) if x.nixl_gbps else "-", str(x.run or "-")]]
            for x in choices]
    return FittedTable("which transport wins where (transport=both: Mooncake / NIXL per pair of samples, p10–p90)",
                       [("bench", "id"), ("between", "text"), ("block", "id"), ("wins", "id"),
                        ("Mooncake / NIXL", "number"), ("Mooncake GB/s", "number"), ("NIXL GB/s", "number"),
                        ("run", "text")], rows, optional=("run",))


def history_table(bench: str, series: list[dict[str, Any]], segments: list[Any],
                  verdicts: list[Any] | None = None) -> FittedTable:
    """One case over its runs (oldest first), each run labelled with its level segment and with
    `compare`'s verdict from the run before it."""
    from kvbench.analyze.regress.history import verdict_words

    judged = verdicts or [None] * len(series)
    rows = []
    for n, seg in enumerate(segments):
        for r, c in zip(series[seg.start:seg.end], judged[seg.start:seg.end], strict=True):
            rows.append([str(r["run_id"]), f"{r['started_at']:%Y-%m-%d %H:%M %Z}", format_gbps(r["gbps_median"]),
                         f"{n + 1} (median {format_gbps(seg.median)} GB/s)",
                         verdict_words(c)
                         if c is not None and c.change is not None else "-"])
    return FittedTable(escape(f"{bench} {describe_params(bench, series[0]['params'])}"),
                       [("run", "id"), ("started", "id"), ("median GB/s", "number"), ("segment", "text"),
                        ("vs the run before", "text")], rows)


def fleet_table(rows: list[Any], title: str, outliers_only: bool) -> FittedTable:
    """Each host's rate beside its SKU's median; never-wrapped ids and numbers, parameters folding."""
    cells = [[escape(r.bench), escape(describe_params(r.bench, r.params)), escape(str(r.hostname)), escape(str(r.sku)),
              format_gbps(r.gbps), format_gbps(r.sku_median), f"{r.deviation:+.1%}",
              "[bold red]OUTLIER[/]" if r.outlier else ""]
             for r in rows if r.outlier or not outliers_only]
    return FittedTable(title, [("benchmark", "id"), ("parameters", "text"), ("host", "id"), ("SKU", "text"),
                               ("GB/s", "number"), ("SKU median GB/s", "number"), ("deviation", "number"),
                               ("flag", "id")], cells, optional=("SKU",))


def hosts_table(hosts: list[dict[str, Any]], title: str) -> Table:
    table = _table(title, ("host id", "hostname", "first seen", "runs", ""))
    for h in hosts:
        table.add_row(h["id"], h["hostname"], h["first_seen"] or "-", str(h["runs"]), "this box" if h["this_box"] else "")
    return table


def repeat_table(spreads: list[Any], run_ids: list[int], base_runs: int = 1) -> Table:
    """Each case's median over the runs of `kvbench run --repeat` and the noise between them; the allowance
    compare gives a later run against one of them, or against the median of `base_runs` (a baseline)."""
    against = "one of these runs" if base_runs < 2 else f"the median of these {base_runs} (baseline)"
    table = _table(f"runs {', '.join(map(str, run_ids))}: between-run spread (GB/s = 1e9 B/s)",
                   ("benchmark", "case", "runs ok", "median GB/s low–high", "range", "between-run noise (fast end)",
                    f"compare's allowance against {against}"))
    for s in spreads:
        noise = f"±{s.between_run:.1%}" if s.between_run is not None else "- (fewer than 3 runs)"
        table.add_row(s.bench, describe_params(s.bench, s.params), str(len(s.medians)),
                      f"{format_gbps(s.low)}–{format_gbps(s.high)}", f"{s.high / s.low - 1:.1%}", noise,
                      s.allowed.words if s.allowed is not None else allowance_words(s.allowance_ln))
    return table
